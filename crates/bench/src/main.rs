fn main() {
    println!("roaringd-bench: not built yet");
}
