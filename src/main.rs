fn main() {
    // Die quietly on a closed pipe (`flashlab ... | head`) like other Unix tools,
    // instead of panicking in println!.
    // SAFETY: called before any thread starts; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(flashlab::cli::main());
}
