//! `latscope`: see the library crate for everything it does.

fn main() {
    latscope::main()
}
