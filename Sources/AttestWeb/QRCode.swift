import AttestFoundation
import AttestPlugins
import AttestServer
import CQREncode

/// QR codes drawn by the server as SVG, through libqrencode (error correction M, 8-bit mode):
/// the badge page shows its token so a door scanner reads it, with no script and no image file.
enum QRCode {
    /// The modules of `text` as rows of booleans (true: dark), or nil when libqrencode cannot
    /// encode it (too long for any version).
    static func modules(_ text: String) -> [[Bool]]? {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        guard width > 0, let data = code.pointee.data else { return nil }
        return (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
    }

    /// An inline SVG of `text`'s code with a four-module quiet zone, one path of unit squares,
    /// scaled by the page; `label` is its accessible name. Nil when it cannot be encoded.
    static func svg(_ text: String, label: String) -> String? {
        guard let rows = modules(text) else { return nil }
        let size = rows.count + 8
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(size) \(size)" role="img" aria-label="\(WebHTML.escape(label))" \
            shape-rendering="crispEdges" class="qr"><rect width="\(size)" height="\(size)" fill="#fff"/><path d="\(path(rows))" fill="#000"/></svg>
            """
    }

    /// The dark modules as a path: each run of them in a row one rectangle,
    /// `M{x} {y}h{run}v1h-{run}z`, offset by the quiet zone. Written as bytes (`JSONBytes`'
    /// literals and integers, no JSON in it): made with string interpolation, it was a sixth
    /// of the badge page's time.
    static func path(_ rows: [[Bool]]) -> String {
        var path = JSONBytes(capacity: rows.count * rows.count * 4)
        for (y, row) in rows.enumerated() {
            var x = 0
            while x < row.count {
                guard row[x] else {
                    x += 1
                    continue
                }
                var run = 1
                while x + run < row.count, row[x + run] { run += 1 }
                path.literal("M")
                path.integer(x + 4)
                path.literal(" ")
                path.integer(y + 4)
                path.literal("h")
                path.integer(run)
                path.literal("v1h-")
                path.integer(run)
                path.literal("z")
                x += run
            }
        }
        return path.text
    }
}
