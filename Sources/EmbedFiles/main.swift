// Writes a Swift file holding text files as a dictionary of raw string literals, by path
// relative to a root. Usage: EmbedFiles <output> <identifier> <root> <file>…
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: EmbedFiles <output> <identifier> <root> <file>…\n".utf8))
    exit(2)
}
let root = URL(fileURLWithPath: arguments[3]).standardizedFileURL.path
var entries: [String] = []
for path in arguments.dropFirst(4).sorted() {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
    let name = absolute.hasPrefix(root + "/") ? String(absolute.dropFirst(root.count + 1)) : URL(fileURLWithPath: path).lastPathComponent
    // A raw-string delimiter long enough that the text cannot close the literal early.
    var hashes = "#"
    while text.contains("\"\"\"" + hashes) || text.contains("\"" + hashes) { hashes += "#" }
    entries.append("    \(name.debugDescription): \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes),")
}
let source = """
    // Generated at build time from the files under \(URL(fileURLWithPath: root).lastPathComponent). Do not edit.
    let \(arguments[2]): [String: String] = [
    \(entries.isEmpty ? ":" : entries.joined(separator: "\n"))
    ]

    """
try source.write(toFile: arguments[1], atomically: true, encoding: .utf8)
