//! JOSE against the RFCs' own vectors (RFC 7515 appendix A, RFC 7520 §3–4, RFC 7638 §3.1,
//! RFC 8037 appendix A), plus round trips, tampering and algorithm confusion.

#![cfg(feature = "auth")]

use arctern::auth::jose::{
    Algorithm, Claims, DpopCheck, DpopProof, Header, JoseError, Jwk, JwkSet, Jws, KeyType,
    SigningKey, Validation, access_token_hash, base64url, client_assertion, verify_dpop_proof,
};
use serde_json::json;

/// RFC 7515 appendix A.2.1: the RSA key.
const A2_RSA: &str = r#"{"kty":"RSA",
 "n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ",
 "e":"AQAB",
 "d":"Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ",
 "p":"4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcmnPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc",
 "q":"uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc",
 "dp":"BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0",
 "dq":"h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU",
 "qi":"IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U"}"#;

/// RFC 7515 appendix A.2/A.3 payload: `{"iss":"joe",\r\n "exp":1300819380,\r\n "http://example.com/is_root":true}`.
const A_PAYLOAD: &[u8] =
    b"{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n \"http://example.com/is_root\":true}";

/// RFC 7515 appendix A.2.1: the complete JWS.
const A2_JWS: &str = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";

/// RFC 7515 appendix A.3.1: the EC P-256 key and the JWS.
const A3_EC: &str = r#"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
const A3_JWS: &str = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";

/// RFC 7515 appendix A.4 (ES512, P-521: not implemented) and A.1 (HS256) and A.5 (none).
const A4_JWS: &str = "eyJhbGciOiJFUzUxMiJ9.UGF5bG9hZA.AdwMgeerwtHoh-l192l60hp9wAHZFVJbLfD_UxMi70cwnZOYaRI1bKPWROc-mZZqwqT2SI-KGDKB34XO0aw_7XdtAG8GaSwFKdCAPZgoXD2YBJZCPEX3xKpRwcdOO8KpEHwJjyqOgzDO7iKvU8vcnwNrmxYbSW9ERBXukOXolLzeO_Jn";
const A1_JWS: &str = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const A5_JWS: &str = "eyJhbGciOiJub25lIn0.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.";

/// RFC 7520 §3.4: the RSA private key, and §4.1: its RS256 signature over the §4 payload.
const BILBO: &str = r#"{"kty":"RSA","kid":"bilbo.baggins@hobbiton.example","use":"sig",
 "n":"n4EPtAOCc9AlkeQHPzHStgAbgs7bTZLwUBZdR8_KuKPEHLd4rHVTeT-O-XV2jRojdNhxJWTDvNd7nqQ0VEiZQHz_AJmSCpMaJMRBSFKrKb2wqVwGU_NsYOYL-QtiWN2lbzcEe6XC0dApr5ydQLrHqkHHig3RBordaZ6Aj-oBHqFEHYpPe7Tpe-OfVfHd1E6cS6M1FZcD1NNLYD5lFHpPI9bTwJlsde3uhGqC0ZCuEHg8lhzwOHrtIQbS0FVbb9k3-tVTU4fg_3L_vniUFAKwuCLqKnS2BYwdq_mzSnbLY7h_qixoR7jig3__kRhuaxwUkRz5iaiQkqgc5gHdrNP5zw",
 "e":"AQAB",
 "d":"bWUC9B-EFRIo8kpGfh0ZuyGPvMNKvYWNtB_ikiH9k20eT-O1q_I78eiZkpXxXQ0UTEs2LsNRS-8uJbvQ-A1irkwMSMkK1J3XTGgdrhCku9gRldY7sNA_AKZGh-Q661_42rINLRCe8W-nZ34ui_qOfkLnK9QWDDqpaIsA-bMwWWSDFu2MUBYwkHTMEzLYGqOe04noqeq1hExBTHBOBdkMXiuFhUq1BU6l-DqEiWxqg82sXt2h-LMnT3046AOYJoRioz75tSUQfGCshWTBnP5uDjd18kKhyv07lhfSJdrPdM5Plyl21hsFf4L_mHCuoFau7gdsPfHPxxjVOcOpBrQzwQ",
 "p":"3Slxg_DwTXJcb6095RoXygQCAZ5RnAvZlno1yhHtnUex_fp7AZ_9nRaO7HX_-SFfGQeutao2TDjDAWU4Vupk8rw9JR0AzZ0N2fvuIAmr_WCsmGpeNqQnev1T7IyEsnh8UMt-n5CafhkikzhEsrmndH6LxOrvRJlsPp6Zv8bUq0k",
 "q":"uKE2dh-cTf6ERF4k4e_jy78GfPYUIaUyoSSJuBzp3Cubk3OCqs6grT8bR_cu0Dm1MZwWmtdqDyI95HrUeq3MP15vMMON8lHTeZu2lmKvwqW7anV5UzhM1iZ7z4yMkuUwFWoBvyY898EXvRD-hdqRxHlSqAZ192zB3pVFJ0s7pFc",
 "dp":"B8PVvXkvJrj2L-GYQ7v3y9r6Kw5g9SahXBwsWUzp19TVlgI-YV85q1NIb1rxQtD-IsXXR3-TanevuRPRt5OBOdiMGQp8pbt26gljYfKU_E9xn-RULHz0-ed9E9gXLKD4VGngpz-PfQ_q29pk5xWHoJp009Qf1HvChixRX59ehik",
 "dq":"CLDmDGduhylc9o7r84rEUVn7pzQ6PF83Y-iBZx5NT-TpnOZKF1pErAMVeKzFEl41DlHHqqBLSM0W1sOFbwTxYWZDm6sI6og5iTbwQGIC3gnJKbi_7k_vJgGHwHxgPaX2PnvP-zyEkDERuf-ry4c_Z11Cq9AqC2yeL6kdKT1cYF8",
 "qi":"3PiqvXQN0zwMeE-sBvZgi289XP9XCQF3VWqPzMKnIgQp7_Tugo6-NZBKCQsMf3HaEGBjTVJs_jcK8-TRXvaKe-7ZMaQj8VfBdYkssbu0NKDDhjJ-GtiseaDVWt7dcH0cfwxgFUHpQh7FoCrjFJ6h6ZEpMF6xmujs4qMpPz8aaI4"}"#;
const BILBO_PAYLOAD: &str = "It\u{2019}s a dangerous business, Frodo, going out your door. You step onto the road, and if you don't keep your feet, there\u{2019}s no knowing where you might be swept off to.";
const BILBO_JWS: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImJpbGJvLmJhZ2dpbnNAaG9iYml0b24uZXhhbXBsZSJ9.SXTigJlzIGEgZGFuZ2Vyb3VzIGJ1c2luZXNzLCBGcm9kbywgZ29pbmcgb3V0IHlvdXIgZG9vci4gWW91IHN0ZXAgb250byB0aGUgcm9hZCwgYW5kIGlmIHlvdSBkb24ndCBrZWVwIHlvdXIgZmVldCwgdGhlcmXigJlzIG5vIGtub3dpbmcgd2hlcmUgeW91IG1pZ2h0IGJlIHN3ZXB0IG9mZiB0by4.MRjdkly7_-oTPTS3AXP41iQIGKa80A0ZmTuV5MEaHoxnW2e5CZ5NlKtainoFmKZopdHM1O2U4mwzJdQx996ivp83xuglII7PNDi84wnB-BDkoBwA78185hX-Es4JIwmDLJK3lfWRa-XtL0RnltuYv746iYTh_qHRD68BNt1uSNCrUCTJDt5aAE6x8wW1Kt9eRo4QPocSadnHXFxnt8Is9UzpERV0ePPQdLuW3IS_de3xyIrDaLGdjluPxUAhb6L2aXic1U12podGU0KLUQSE_oI-ZnmKJ3F4uOZDnd6QZWJushZ41Axf_fcIe8u9ipH84ogoree7vjbU5y18kDquDg";

/// RFC 8037 appendix A.1–A.4: the Ed25519 key, its thumbprint and the JWS.
const ED: &str = r#"{"kty":"OKP","crv":"Ed25519","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
const ED_THUMBPRINT: &str = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
const ED_JWS: &str = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";

/// RFC 7638 §3.1: the key and its thumbprint.
const RFC7638: &str = r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#;

const ALL: &[Algorithm] = Algorithm::ALL;

fn data(name: &str) -> String {
    let path = format!("{}/tests/data/jose/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("fixture")
}

#[test]
fn rfc7515_a2_rs256_signs_and_verifies_exactly() {
    let key = SigningKey::from_jwk(&Jwk::from_json(A2_RSA).unwrap()).unwrap();
    assert_eq!(key.algorithm(), Algorithm::RS256);
    // RSASSA-PKCS1-v1_5 is deterministic: the RFC's exact bytes come back.
    assert_eq!(key.sign_jws(&Header::new(), A_PAYLOAD).unwrap(), A2_JWS);
    let verified = Jws::parse(A2_JWS)
        .unwrap()
        .verify(&key.public_jwk(), &[Algorithm::RS256])
        .unwrap();
    assert_eq!(verified.payload(), A_PAYLOAD);
    let claims: Claims = verified.claims().unwrap();
    assert_eq!(claims.iss.as_deref(), Some("joe"));
    assert_eq!(claims.exp, Some(1_300_819_380));
    assert_eq!(claims.extra["http://example.com/is_root"], json!(true));
}

#[test]
fn rfc7515_a3_es256_verifies() {
    let jwk = Jwk::from_json(A3_EC).unwrap();
    let public = jwk.to_public();
    let verified = Jws::parse(A3_JWS)
        .unwrap()
        .verify(&public, &[Algorithm::ES256])
        .unwrap();
    assert_eq!(verified.payload(), A_PAYLOAD);
    // ECDSA is randomised: a fresh signature differs, and verifies.
    let key = SigningKey::from_jwk(&jwk).unwrap();
    let again = key.sign_jws(&Header::new(), A_PAYLOAD).unwrap();
    assert_ne!(again, A3_JWS);
    Jws::parse(&again)
        .unwrap()
        .verify(&public, &[Algorithm::ES256])
        .unwrap();
}

#[test]
fn rfc7515_unimplemented_algorithms_fail_to_parse() {
    for (token, alg) in [(A1_JWS, "HS256"), (A4_JWS, "ES512"), (A5_JWS, "none")] {
        match Jws::parse(token) {
            Err(JoseError::UnsupportedAlgorithm(a)) => assert_eq!(a, alg),
            Err(JoseError::Malformed(_)) if alg == "none" => {} // empty signature
            other => panic!("{alg}: {other:?}"),
        }
    }
    // `none` with a signature segment is still refused for its algorithm.
    let forged = format!(
        "{}.{}.AAAA",
        base64url::encode(br#"{"alg":"none"}"#),
        base64url::encode(b"{}")
    );
    assert_eq!(
        Jws::parse(&forged).unwrap_err(),
        JoseError::UnsupportedAlgorithm("none".into())
    );
    // So is a P-521 key.
    let p521 = r#"{"kty":"EC","crv":"P-521","x":"AekpBQ8ST8a8VcfVOTNl353vSrDCLLJXmPk06wTjxrrjcBpXp5EOnYG_NjFZ6OvLFV1jSfS9tsz4qUxcWceqwQGk","y":"ADSmRA43Z1DSNx_RvcLI87cdL07l6jQyyBXMoxVg_l2Th-x3S1WDhjDly79ajL4Kkd0AZMaZmh9ubmf63e3kyMj2"}"#;
    assert!(matches!(
        Jwk::from_json(p521),
        Err(JoseError::UnsupportedKey(_))
    ));
}

#[test]
fn rfc7520_rs256_with_kid() {
    let jwk = Jwk::from_json(BILBO).unwrap();
    assert_eq!(jwk.kid(), Some("bilbo.baggins@hobbiton.example"));
    let key = SigningKey::from_jwk(&jwk).unwrap();
    assert_eq!(
        key.sign_jws(&Header::new(), BILBO_PAYLOAD.as_bytes())
            .unwrap(),
        BILBO_JWS
    );
    let set = JwkSet::new([jwk.clone()]);
    assert!(!set.keys()[0].is_private(), "a set holds public keys only");
    let verified = Jws::parse(BILBO_JWS)
        .unwrap()
        .verify_with_set(&set, &[Algorithm::RS256])
        .unwrap();
    assert_eq!(verified.payload(), BILBO_PAYLOAD.as_bytes());
    assert_eq!(verified.key_thumbprint(), jwk.thumbprint());
}

#[test]
fn rfc8037_ed25519() {
    let jwk = Jwk::from_json(ED).unwrap();
    assert_eq!(jwk.thumbprint(), ED_THUMBPRINT);
    assert_eq!(jwk.to_public().thumbprint(), ED_THUMBPRINT);
    let key = SigningKey::from_jwk(&jwk).unwrap();
    assert_eq!(key.algorithm(), Algorithm::EdDSA);
    assert_eq!(
        key.sign_jws(&Header::new(), b"Example of Ed25519 signing")
            .unwrap(),
        ED_JWS
    );
    let verified = Jws::parse(ED_JWS)
        .unwrap()
        .verify(&jwk.to_public(), &[Algorithm::EdDSA])
        .unwrap();
    assert_eq!(verified.payload(), b"Example of Ed25519 signing");
}

#[test]
fn rfc7638_thumbprint() {
    let jwk = Jwk::from_json(RFC7638).unwrap();
    assert_eq!(
        jwk.thumbprint(),
        "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
    );
    // Optional members do not change it.
    assert_eq!(jwk.clone().with_kid("other").thumbprint(), jwk.thumbprint());
}

#[test]
fn jwk_json_round_trips_public_and_private() {
    for text in [A2_RSA, A3_EC, ED, BILBO] {
        let jwk = Jwk::from_json(text).unwrap();
        assert!(jwk.is_private());
        let back = Jwk::from_json(&jwk.to_json()).unwrap();
        assert_eq!(back, jwk);
        let public = jwk.to_public();
        assert!(!public.is_private());
        assert!(!public.to_json().contains("\"d\""));
        assert_eq!(Jwk::from_json(&public.to_json()).unwrap(), public);
        assert_eq!(public.thumbprint(), jwk.thumbprint());
        // serde goes the same way.
        let via_serde: Jwk = serde_json::from_value(serde_json::to_value(&jwk).unwrap()).unwrap();
        assert_eq!(via_serde, jwk);
        assert!(
            !format!("{jwk:?}").contains("\"d\""),
            "Debug hides private members"
        );
    }
}

#[test]
fn pkcs8_pem_keys_load_and_match_their_jwks() {
    // The RFC 7515 A.2 key as PKCS#8 PEM: same signature as the RFC.
    let rsa = SigningKey::from_pkcs8_pem(&data("rfc7515_a2_rsa.pem")).unwrap();
    assert_eq!(rsa.sign_jws(&Header::new(), A_PAYLOAD).unwrap(), A2_JWS);
    assert_eq!(
        rsa.private_jwk().to_public(),
        Jwk::from_json(A2_RSA)
            .unwrap()
            .to_public()
            .with_alg(Algorithm::RS256)
    );
    assert_eq!(
        SigningKey::from_jwk(&rsa.private_jwk())
            .unwrap()
            .thumbprint(),
        rsa.thumbprint()
    );
    // The RFC 7515 A.3 key.
    let ec = SigningKey::from_pkcs8_pem(&data("rfc7515_a3_ec.pem")).unwrap();
    assert_eq!(ec.algorithm(), Algorithm::ES256);
    let a3 = Jwk::from_json(A3_EC).unwrap();
    assert_eq!(ec.thumbprint(), a3.thumbprint());
    assert_eq!(ec.private_jwk(), a3.with_alg(Algorithm::ES256));
    // The RFC 8037 key: same signature as the RFC.
    let ed = SigningKey::from_pkcs8_pem(&data("rfc8037_ed25519.pem")).unwrap();
    assert_eq!(
        ed.sign_jws(&Header::new(), b"Example of Ed25519 signing")
            .unwrap(),
        ED_JWS
    );
    assert_eq!(ed.thumbprint(), ED_THUMBPRINT);
    // P-384.
    let p384 = SigningKey::from_pkcs8_pem(&data("p384.pem")).unwrap();
    assert_eq!(p384.algorithm(), Algorithm::ES384);
    let token = p384.sign_jws(&Header::new(), b"x").unwrap();
    Jws::parse(&token)
        .unwrap()
        .verify(&p384.public_jwk(), &[Algorithm::ES384])
        .unwrap();
    // PKCS#1 is not PKCS#8: a clear error.
    let err = SigningKey::from_pkcs8_pem(&data("rsa_pkcs1.pem")).unwrap_err();
    assert!(err.to_string().contains("BEGIN PRIVATE KEY"), "{err}");
    assert!(SigningKey::from_pkcs8_pem("not a pem").is_err());
}

#[test]
fn every_algorithm_round_trips_and_rejects_tampering() {
    let rsa = Jwk::from_json(A2_RSA).unwrap();
    let keys: Vec<SigningKey> = [
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
        Algorithm::PS256,
        Algorithm::PS384,
        Algorithm::PS512,
    ]
    .into_iter()
    .map(|alg| {
        SigningKey::from_jwk(&rsa)
            .unwrap()
            .with_algorithm(alg)
            .unwrap()
    })
    .chain(
        [Algorithm::ES256, Algorithm::ES384, Algorithm::EdDSA]
            .map(|a| SigningKey::generate(a).unwrap()),
    )
    .collect();
    for key in &keys {
        let alg = key.algorithm();
        let claims = Claims {
            sub: Some("alice".into()),
            ..Claims::default()
        };
        let token = key.sign_jwt(&Header::typed("JWT"), &claims).unwrap();
        let public = key.public_jwk();
        let jws = Jws::parse(&token).unwrap();
        assert_eq!(jws.algorithm(), alg);
        assert_eq!(jws.header().typ.as_deref(), Some("JWT"));
        let back: Claims = jws.verify(&public, ALL).unwrap().claims().unwrap();
        assert_eq!(back, claims, "{alg}");
        // Not in the allow-list.
        let others: Vec<Algorithm> = ALL.iter().copied().filter(|a| *a != alg).collect();
        assert_eq!(
            jws.verify(&public, &others).unwrap_err(),
            JoseError::AlgorithmNotAllowed(alg)
        );
        // Payload swapped, signature flipped, header swapped.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let original = parts.clone();
        parts[1] = base64url::encode(br#"{"sub":"mallory"}"#);
        assert_eq!(
            Jws::parse(&parts.join("."))
                .unwrap()
                .verify(&public, ALL)
                .unwrap_err(),
            JoseError::BadSignature,
            "{alg}"
        );
        let mut sig = base64url::decode(&original[2], "sig").unwrap();
        let last = sig.len() - 1;
        sig[last] ^= 1;
        let flipped = format!(
            "{}.{}.{}",
            original[0],
            original[1],
            base64url::encode(&sig)
        );
        assert_eq!(
            Jws::parse(&flipped)
                .unwrap()
                .verify(&public, ALL)
                .unwrap_err(),
            JoseError::BadSignature,
            "{alg}"
        );
        // Another key of the same type does not verify it.
        if alg.key_type() != KeyType::Rsa {
            let other = SigningKey::generate(alg).unwrap().public_jwk();
            assert_eq!(
                jws.verify(&other, ALL).unwrap_err(),
                JoseError::BadSignature
            );
        }
    }
}

#[test]
fn a_key_verifies_only_its_own_algorithms() {
    let es256 = SigningKey::generate(Algorithm::ES256).unwrap();
    let token = es256.sign_jws(&Header::new(), b"x").unwrap();
    let rsa_public = Jwk::from_json(A2_RSA).unwrap().to_public();
    // An RSA key never verifies an ES256 token, an ES384 key never an ES256 one.
    assert_eq!(
        Jws::parse(&token)
            .unwrap()
            .verify(&rsa_public, ALL)
            .unwrap_err(),
        JoseError::KeyMismatch(Algorithm::ES256)
    );
    let p384 = SigningKey::generate(Algorithm::ES384).unwrap().public_jwk();
    assert_eq!(
        Jws::parse(&token).unwrap().verify(&p384, ALL).unwrap_err(),
        JoseError::KeyMismatch(Algorithm::ES256)
    );
    // A JWK that names `alg` verifies only that algorithm.
    let pinned = Jwk::from_json(A2_RSA)
        .unwrap()
        .to_public()
        .with_alg(Algorithm::PS256);
    let rs256 = Jws::parse(A2_JWS).unwrap();
    assert_eq!(
        rs256.verify(&pinned, ALL).unwrap_err(),
        JoseError::KeyMismatch(Algorithm::RS256)
    );
    // `use: enc` keys do not verify signatures.
    let mut enc = serde_json::from_str::<serde_json::Value>(A2_RSA).unwrap();
    enc["use"] = json!("enc");
    let enc = Jwk::from_value(&enc).unwrap().to_public();
    assert!(rs256.verify(&enc, ALL).is_err());
    // A signing key refuses an algorithm of another type.
    assert!(
        SigningKey::generate(Algorithm::ES256)
            .unwrap()
            .with_algorithm(Algorithm::PS256)
            .is_err()
    );
    assert!(
        SigningKey::generate(Algorithm::RS256).is_err(),
        "ring cannot generate RSA keys"
    );
}

#[test]
fn hs256_signed_with_the_rsa_public_key_is_refused() {
    // The classic confusion: an HMAC over the token keyed with the RSA public key's bytes.
    let public = Jwk::from_json(A2_RSA).unwrap().to_public();
    let header = base64url::encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = base64url::encode(br#"{"sub":"admin"}"#);
    let input = format!("{header}.{payload}");
    let hmac_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, public.to_json().as_bytes());
    let tag = ring::hmac::sign(&hmac_key, input.as_bytes());
    let token = format!("{input}.{}", base64url::encode(tag.as_ref()));
    assert_eq!(
        Jws::parse(&token).unwrap_err(),
        JoseError::UnsupportedAlgorithm("HS256".into())
    );
}

#[test]
fn malformed_tokens_fail_cleanly() {
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let good = key.sign_jws(&Header::new(), b"{}").unwrap();
    let (h, rest) = good.split_once('.').unwrap();
    let cases = [
        String::new(),
        "a.b".into(),
        "a.b.c.d".into(),
        format!("{good}."),
        format!("{good}="),
        format!("{}.{rest}", base64url::encode(b"[]")),
        format!(
            "{}.{rest}",
            base64url::encode(br#"{"alg":"ES256","crit":["exp"]}"#)
        ),
        format!(
            "{}.{rest}",
            base64url::encode(br#"{"alg":"ES256","kid":5}"#)
        ),
        format!(
            "{}.{rest}",
            base64url::encode(
                br#"{"alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}}"#
            )
        ),
        format!("{}.{rest}", base64url::encode(b"\xff\xfe")),
        format!("{h}.@@@.AAAA"),
    ];
    for token in cases {
        assert!(Jws::parse(&token).is_err(), "{token:?}");
    }
    // Claims that are not an object, and claims of the wrong type.
    let array = key.sign_jws(&Header::new(), b"[1]").unwrap();
    let public = key.public_jwk();
    assert!(
        Jws::parse(&array)
            .unwrap()
            .verify(&public, ALL)
            .unwrap()
            .claims::<Claims>()
            .is_err()
    );
    let bad_exp = key
        .sign_jws(&Header::new(), br#"{"exp":"tomorrow"}"#)
        .unwrap();
    assert!(
        Jws::parse(&bad_exp)
            .unwrap()
            .verify(&public, ALL)
            .unwrap()
            .claims::<Claims>()
            .is_err()
    );
    let fractional = key
        .sign_jws(&Header::new(), br#"{"exp":1700000000.75}"#)
        .unwrap();
    let claims: Claims = Jws::parse(&fractional)
        .unwrap()
        .verify(&public, ALL)
        .unwrap()
        .claims()
        .unwrap();
    assert_eq!(claims.exp, Some(1_700_000_000));
}

#[test]
fn jwks_skips_what_it_cannot_use_and_selects_by_kid() {
    let a = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("a");
    let b = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("b");
    let text = json!({"keys": [
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"},
        a.public_jwk(),
        b.private_jwk(),
        "not a key",
    ]})
    .to_string();
    let set = JwkSet::from_json(&text).unwrap();
    assert_eq!(set.keys().len(), 2);
    assert_eq!(set.skipped(), 3);
    assert!(
        set.keys().iter().all(|k| !k.is_private()),
        "private members are dropped"
    );
    assert!(set.contains_kid("b") && !set.contains_kid("hmac"));
    let token = b.sign_jws(&Header::new(), b"{}").unwrap();
    let verified = Jws::parse(&token)
        .unwrap()
        .verify_with_set(&set, ALL)
        .unwrap();
    assert_eq!(verified.key_thumbprint(), b.thumbprint());
    // An unknown kid is reported as such (a resource server refreshes its set on it).
    let c = SigningKey::generate(Algorithm::ES256)
        .unwrap()
        .with_kid("c");
    let token = c.sign_jws(&Header::new(), b"{}").unwrap();
    assert_eq!(
        Jws::parse(&token)
            .unwrap()
            .verify_with_set(&set, ALL)
            .unwrap_err(),
        JoseError::UnknownKey(Some("c".into()))
    );
    // Without a kid, every key that fits is tried.
    let no_kid = SigningKey::generate(Algorithm::ES256).unwrap();
    let set2 = JwkSet::new([a.public_jwk(), no_kid.public_jwk()]);
    let token = no_kid.sign_jws(&Header::new(), b"{}").unwrap();
    assert!(
        Jws::parse(&token)
            .unwrap()
            .verify_with_set(&set2, ALL)
            .is_ok()
    );
    let token = c
        .clone()
        .sign_jws(&Header::new().with_kid("a"), b"{}")
        .unwrap();
    assert_eq!(
        Jws::parse(&token)
            .unwrap()
            .verify_with_set(&set2, ALL)
            .unwrap_err(),
        JoseError::BadSignature
    );
    assert!(JwkSet::from_json("{}").is_err());
    assert_eq!(
        JwkSet::from_json(&set.to_json()).unwrap().keys(),
        set.keys()
    );
}

#[test]
fn validation_of_registered_claims() {
    let v = Validation::new()
        .issuer("https://as")
        .audience("https://rs/mcp");
    let ok = Claims {
        iss: Some("https://as".into()),
        aud: Some(arctern::auth::jose::Audience::Many(vec![
            "other".into(),
            "https://rs/mcp".into(),
        ])),
        exp: Some(1_000),
        nbf: Some(900),
        iat: Some(900),
        ..Claims::default()
    };
    assert!(v.check(&ok, 950).is_ok());
    assert!(
        v.check(&ok, 1_059).is_ok(),
        "within the default 60 s leeway"
    );
    assert!(v.check(&ok, 1_060).is_err());
    assert!(v.check(&ok, 839).is_err(), "nbf beyond the leeway");
    let wrong_iss = Claims {
        iss: Some("https://as/".into()),
        ..ok.clone()
    };
    assert!(
        v.check(&wrong_iss, 950).is_err(),
        "no normalisation of the issuer"
    );
    let wrong_aud = Claims {
        aud: Some("https://rs".into()),
        ..ok.clone()
    };
    assert!(v.check(&wrong_aud, 950).is_err());
    let no_aud = Claims {
        aud: None,
        ..ok.clone()
    };
    assert!(v.check(&no_aud, 950).is_err());
    let no_exp = Claims {
        exp: None,
        ..ok.clone()
    };
    assert!(v.check(&no_exp, 950).is_err());
    assert!(v.clone().require_exp(false).check(&no_exp, 950).is_ok());
    // Scopes from `scope`, or from `scp`.
    let c = Claims {
        scope: Some("a  b c".into()),
        ..Claims::default()
    };
    assert_eq!(c.scopes(), ["a", "b", "c"]);
    let mut c = Claims::default();
    c.extra.insert("scp".into(), json!(["x", "y"]));
    assert_eq!(c.scopes(), ["x", "y"]);
}

#[test]
fn client_assertions_carry_the_rfc7523_claims() {
    let key = SigningKey::from_pkcs8_pem(&data("rfc7515_a3_ec.pem"))
        .unwrap()
        .with_kid("k");
    let jwt = client_assertion(
        &key,
        "client-1",
        "https://as.example",
        std::time::Duration::from_secs(60),
    )
    .unwrap();
    let jws = Jws::parse(&jwt).unwrap();
    assert_eq!(jws.header().kid.as_deref(), Some("k"));
    let claims: Claims = jws
        .verify(&key.public_jwk(), &[Algorithm::ES256])
        .unwrap()
        .claims()
        .unwrap();
    assert_eq!(claims.iss.as_deref(), Some("client-1"));
    assert_eq!(claims.sub.as_deref(), Some("client-1"));
    assert!(claims.aud.unwrap().contains("https://as.example"));
    assert_eq!(claims.exp.unwrap() - claims.iat.unwrap(), 60);
    assert!(claims.jti.unwrap().len() >= 22);
}

#[test]
fn dpop_proofs() {
    let key = SigningKey::generate(Algorithm::ES256).unwrap();
    let token = "access-token-123";
    let now = arctern::auth::jose::unix_now();
    let proof = DpopProof::new("POST", "https://MCP.example:443/mcp?query=1#frag")
        .access_token(token)
        .nonce("n-1")
        .sign(&key)
        .unwrap();
    let jws = Jws::parse(&proof).unwrap();
    assert_eq!(jws.header().typ.as_deref(), Some("dpop+jwt"));
    assert!(jws.header().jwk.is_some() && jws.header().kid.is_none());
    let claims: serde_json::Value = serde_json::from_slice(jws.unverified_payload()).unwrap();
    assert_eq!(claims["htu"], "https://MCP.example:443/mcp");
    assert_eq!(claims["ath"], access_token_hash(token));

    let check = DpopCheck::new("POST", "https://mcp.example/mcp").access_token(token);
    let verified = verify_dpop_proof(&proof, &check).unwrap();
    assert_eq!(verified.jkt, key.thumbprint());
    assert_eq!(verified.nonce.as_deref(), Some("n-1"));
    assert!(verified.iat.abs_diff(now) <= 2);

    // Each mismatch fails.
    let wrong = [
        DpopCheck::new("GET", "https://mcp.example/mcp").access_token(token),
        DpopCheck::new("POST", "https://mcp.example/other").access_token(token),
        DpopCheck::new("POST", "http://mcp.example/mcp").access_token(token),
        DpopCheck::new("POST", "https://mcp.example:8443/mcp").access_token(token),
        DpopCheck::new("POST", "https://mcp.example/mcp").access_token("another-token"),
        DpopCheck::new("POST", "https://mcp.example/mcp")
            .access_token(token)
            .at(now + 301),
        DpopCheck::new("POST", "https://mcp.example/mcp")
            .access_token(token)
            .at(now - 60),
        DpopCheck::new("POST", "https://mcp.example/mcp")
            .access_token(token)
            .allowed(&[Algorithm::EdDSA]),
    ];
    for check in wrong {
        assert!(verify_dpop_proof(&proof, &check).is_err(), "{check:?}");
    }
    // A proof without ath where a token is expected.
    let bare = DpopProof::new("POST", "https://mcp.example/mcp")
        .sign(&key)
        .unwrap();
    assert!(verify_dpop_proof(&bare, &check).is_err());
    assert!(verify_dpop_proof(&bare, &DpopCheck::new("POST", "https://mcp.example/mcp")).is_ok());
    // Not a DPoP proof: another typ, or a kid instead of a jwk.
    let jwt = key
        .sign_jwt(
            &Header::typed("JWT").with_jwk(key.public_jwk()),
            &json!({"jti":"1","htm":"POST","htu":"https://mcp.example/mcp","iat":now}),
        )
        .unwrap();
    assert!(verify_dpop_proof(&jwt, &DpopCheck::new("POST", "https://mcp.example/mcp")).is_err());
    let kid = key
        .clone()
        .with_kid("k")
        .sign_jwt(
            &Header::typed("dpop+jwt"),
            &json!({"jti":"1","htm":"POST","htu":"https://mcp.example/mcp","iat":now}),
        )
        .unwrap();
    assert!(verify_dpop_proof(&kid, &DpopCheck::new("POST", "https://mcp.example/mcp")).is_err());
    // A header key that did not sign it.
    let other = SigningKey::generate(Algorithm::ES256).unwrap();
    let swapped = key
        .sign_jwt(
            &Header::typed("dpop+jwt").with_jwk(other.public_jwk()),
            &json!({"jti":"1","htm":"POST","htu":"https://mcp.example/mcp","iat":now}),
        )
        .unwrap();
    assert_eq!(
        verify_dpop_proof(&swapped, &DpopCheck::new("POST", "https://mcp.example/mcp"))
            .unwrap_err(),
        JoseError::BadSignature
    );
    // Fresh jti each time.
    let p1 = DpopProof::new("POST", "https://a/b").sign(&key).unwrap();
    let p2 = DpopProof::new("POST", "https://a/b").sign(&key).unwrap();
    let c = DpopCheck::new("POST", "https://a/b");
    assert_ne!(
        verify_dpop_proof(&p1, &c).unwrap().jti,
        verify_dpop_proof(&p2, &c).unwrap().jti
    );
}
