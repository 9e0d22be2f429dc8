use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size", message = "Which size?")]
struct Size(String);

fn main() {}
