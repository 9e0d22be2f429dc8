use arctern_macros::Question;

#[derive(Question)]
#[question(key = "size", message = "Which size?")]
struct Size<T> {
    size: T,
}

fn main() {}
