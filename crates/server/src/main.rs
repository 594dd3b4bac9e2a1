fn main() {
    println!("roaringd: not built yet");
}
