use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size")]
struct Size {
    size: String,
}

fn main() {}
