//! `roaringd [config-file] [--name value ...]`: parse the configuration,
//! open the store, serve until shutdown.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(roaringd_server::start::main_with_args(&args));
}
