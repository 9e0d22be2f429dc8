use arctern_macros::Question;

#[derive(Question)]
struct Size {
    size: String,
}

fn main() {}
