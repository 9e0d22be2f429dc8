//! Derive macros for [arctern](https://docs.rs/arctern). Use them through arctern's `macros`
//! feature: `arctern::server::mrtr::Question`.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr, Path, parse_macro_input};

/// Implements `arctern::server::mrtr::Question` for a struct answered with a form: the
/// struct's fields are the form's fields, and the question's key and message are fixed.
///
/// ```ignore
/// use arctern::server::mrtr::Question;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, Question)]
/// #[question(key = "region", message = "Which region should the database live in?")]
/// struct Region {
///     region: String,
/// }
/// ```
///
/// Attributes (inside `#[question(...)]`):
/// - `key = "..."` (required): the key in `inputRequests`;
/// - `message = "..."` (required): what the user is asked;
/// - `crate = "..."`: the path to the `arctern` crate, when it is renamed.
///
/// The struct needs `Deserialize` and `JsonSchema` too; its schema must be a flat object of
/// strings, numbers, booleans and enums. A question whose wording depends on the call's
/// arguments or on earlier answers implements the trait by hand.
#[proc_macro_derive(Question, attributes(question))]
pub fn derive_question(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match question(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// What `#[question(...)]` says.
struct Attributes {
    key: LitStr,
    message: LitStr,
    krate: Path,
}

fn question(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let named = matches!(
        &input.data,
        Data::Struct(s) if matches!(s.fields, Fields::Named(_))
    );
    if !named {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "`#[derive(Question)]` needs a struct with named fields: they are the fields of the form",
        ));
    }
    if let Some(param) = input.generics.params.first() {
        return Err(syn::Error::new_spanned(
            param,
            "`#[derive(Question)]` does not support generic parameters; implement `Question` by hand",
        ));
    }
    let Attributes {
        key,
        message,
        krate,
    } = attributes(input)?;
    let name = &input.ident;
    Ok(quote! {
        impl #krate::server::mrtr::Question for #name {
            type Args = #krate::server::mrtr::NoArgs;
            type Answer = Self;
            fn ask(
                _: &#krate::server::mrtr::AskContext<'_, #krate::server::mrtr::NoArgs>,
            ) -> ::core::result::Result<#krate::server::mrtr::Ask<Self>, #krate::server::mrtr::NotYet> {
                ::core::result::Result::Ok(#krate::server::mrtr::Ask::form(#key, #message))
            }
            fn describe(question: &mut #krate::server::mrtr::QuestionSignature) {
                question.key(#key);
                question.form::<Self>();
            }
        }
    })
}

fn attributes(input: &DeriveInput) -> syn::Result<Attributes> {
    let mut key: Option<LitStr> = None;
    let mut message: Option<LitStr> = None;
    let mut krate: Option<Path> = None;
    let mut seen = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("question")) {
        seen = true;
        attr.parse_nested_meta(|meta| {
            let slot = if meta.path.is_ident("key") {
                &mut key
            } else if meta.path.is_ident("message") {
                &mut message
            } else if meta.path.is_ident("crate") {
                if krate.is_some() {
                    return Err(meta.error("duplicate `crate`"));
                }
                let path: LitStr = meta.value()?.parse()?;
                krate = Some(path.parse()?);
                return Ok(());
            } else {
                return Err(meta.error(
                    "unknown `#[question]` attribute; expected `key`, `message` or `crate`",
                ));
            };
            let name = if meta.path.is_ident("key") {
                "key"
            } else {
                "message"
            };
            if slot.is_some() {
                return Err(meta.error(format!("duplicate `{name}`")));
            }
            let value: LitStr = meta.value()?.parse()?;
            if value.value().trim().is_empty() {
                return Err(syn::Error::new_spanned(
                    &value,
                    format!("`{name}` must not be empty"),
                ));
            }
            *slot = Some(value);
            Ok(())
        })?;
    }
    if !seen {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "`#[derive(Question)]` needs `#[question(key = \"...\", message = \"...\")]`",
        ));
    }
    let missing = |what: &str| {
        syn::Error::new_spanned(
            &input.ident,
            format!("`#[question(...)]` is missing `{what} = \"...\"`"),
        )
    };
    Ok(Attributes {
        key: key.ok_or_else(|| missing("key"))?,
        message: message.ok_or_else(|| missing("message"))?,
        krate: krate.unwrap_or_else(|| {
            let mut path = Path::from(syn::Ident::new("arctern", Span::call_site()));
            path.leading_colon = Some(Default::default());
            path
        }),
    })
}
