//! "Did you mean …?" for a mistyped name: the closest of the names a server offers (a tool,
//! a prompt, a resource URI) or a tool or prompt takes (an argument), by edit distance.
//!
//! The distance is the optimal string alignment distance (Levenshtein plus the swap of two
//! neighbouring characters, the commonest typo), over characters, case-insensitively. A name
//! is suggested only when it is close enough to be a typo rather than another name: at most
//! one edit for names of up to four characters, two up to eight, three beyond; and when two
//! names are equally close, neither is (a suggestion must not be a coin toss).

/// The candidate closest to `typed`, if one is close enough to be what was meant.
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed: Vec<char> = typed.chars().flat_map(char::to_lowercase).collect();
    let limit = match typed.len() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &str)> = None;
    let mut tied = false;
    for candidate in candidates {
        let other: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
        // Lengths alone rule it out: no need to fill the table.
        if typed.len().abs_diff(other.len()) > limit {
            continue;
        }
        let d = distance(&typed, &other);
        if d > limit {
            continue;
        }
        match best {
            Some((b, name)) if d == b && name != candidate => tied = true,
            Some((b, _)) if d >= b => {}
            _ => {
                best = Some((d, candidate));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, name)| name)
}

/// `" (did you mean \"NAME\"?)"` when a candidate is close to `typed`, else `""`: for the
/// end of a message that names what was not found.
pub fn hint<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, candidates)
        .map(|name| format!(" (did you mean {name:?}?)"))
        .unwrap_or_default()
}

/// The optimal string alignment distance of `a` and `b`; two rows of the table, so the
/// memory is linear in the shorter name.
fn distance(a: &[char], b: &[char]) -> usize {
    // rows[0]: the row two back, rows[1]: the previous one, rows[2]: the current one.
    let mut rows = [
        vec![0; b.len() + 1],
        (0..=b.len()).collect(),
        vec![0; b.len() + 1],
    ];
    for i in 1..=a.len() {
        rows[2][0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[1][j] + 1)
                .min(rows[2][j - 1] + 1)
                .min(rows[1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[0][j - 2] + 1);
            }
            rows[2][j] = d;
        }
        rows.rotate_left(1);
    }
    rows[1][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        distance(&a, &b)
    }

    #[test]
    fn distances() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("provision", "provision"), 0);
        assert_eq!(d("provison", "provision"), 1);
        assert_eq!(d("porvision", "provision"), 1, "a swap is one edit");
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("nme", "name"), 1);
        assert_eq!(
            d("ca", "abc"),
            3,
            "optimal string alignment, not full Damerau"
        );
    }

    #[test]
    fn the_closest_name_is_suggested() {
        let tools = ["provision", "slow_count", "invite", "book_hotel", "haiku"];
        assert_eq!(closest("provison", tools), Some("provision"));
        assert_eq!(closest("PROVISION", tools), Some("provision"));
        assert_eq!(closest("slow-count", tools), Some("slow_count"));
        assert_eq!(closest("invtie", tools), Some("invite"));
        assert_eq!(closest("nme", ["name", "size"]), Some("name"));
        assert_eq!(hint("nme", ["name"]), " (did you mean \"name\"?)");
    }

    #[test]
    fn far_or_tied_names_are_not_suggested() {
        let tools = ["provision", "slow_count", "invite"];
        assert_eq!(closest("deploy", tools), None);
        assert_eq!(closest("", tools), None);
        // Short names allow one edit only: "ab" is not "cd".
        assert_eq!(closest("ab", ["cd"]), None);
        // Two names one edit away: no guess.
        assert_eq!(closest("cat", ["bat", "hat"]), None);
        assert_eq!(hint("zzz", tools), "");
        // The same name listed twice is no tie.
        assert_eq!(closest("nme", ["name", "name"]), Some("name"));
    }

    #[test]
    fn characters_not_bytes() {
        assert_eq!(closest("größe", ["grösse", "größer"]), Some("größer"));
        assert_eq!(d("é", "e"), 1);
    }
}
