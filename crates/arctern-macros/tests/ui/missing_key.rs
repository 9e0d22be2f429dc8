use arctern_macros::Question;

#[derive(Question)]
#[question(message = "Which size?")]
struct Size {
    size: String,
}

fn main() {}
