fn main() {
    std::process::exit(flashlab::cli::main());
}
