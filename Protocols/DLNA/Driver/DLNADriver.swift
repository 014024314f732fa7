import MediaDevice

@main
enum DLNADriverMain {
    static func main() {}
}
