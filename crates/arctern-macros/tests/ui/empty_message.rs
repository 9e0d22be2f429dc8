use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size", message = "  ")]
struct Size {
    size: String,
}

fn main() {}
