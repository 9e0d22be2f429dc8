use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size", key = "other", message = "Which size?")]
struct Size {
    size: String,
}

fn main() {}
