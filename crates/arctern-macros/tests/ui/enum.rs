use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size", message = "Which size?")]
enum Size {
    Small,
    Large,
}

fn main() {}
