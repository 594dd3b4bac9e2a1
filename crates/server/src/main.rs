//! `roaringd [config-file] [--name value ...]`: parse the configuration,
//! open the store, serve until shutdown.

/// mimalloc: the write path allocates and frees a few dozen small buffers
/// per command (keys, overlay maps, batch items); mimalloc's thread-local
/// free lists cost a fraction of glibc malloc's instructions for them.
/// Build with `--no-default-features` for the system allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(roaringd_server::start::main_with_args(&args));
}
