// Writes a Swift file holding a text file's contents as a raw string literal.
// Usage: EmbedSQL <input> <output> <swift identifier>
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: EmbedSQL <input> <output> <identifier>\n".utf8))
    exit(2)
}
let text = try String(contentsOfFile: arguments[1], encoding: .utf8)
// A raw-string delimiter long enough that the text cannot close the literal early.
var hashes = "#"
while text.contains("\"\"\"" + hashes) || text.contains("\"" + hashes) { hashes += "#" }
let source = """
    // Generated from \(URL(fileURLWithPath: arguments[1]).lastPathComponent) at build time. Do not edit.
    let \(arguments[3]): String = \(hashes)\"\"\"
    \(text)
    \"\"\"\(hashes)

    """
try source.write(toFile: arguments[2], atomically: true, encoding: .utf8)
