import AttestPlugins
import Foundation

/// HTML written directly for the parts of a page with many repeated elements (charts and
/// their tables): the same markup as the `chart` and `table` templates would give, without a
/// template engine's per-value lookups, which cost the dashboard most of its render time.
enum WebHTML {
    /// Text escaped for an element's content or a quoted attribute.
    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x3C || $0 == 0x3E || $0 == 0x26 || $0 == 0x22 || $0 == 0x27 }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "&": result += "&amp;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func string(_ value: Any?) -> String {
        switch value {
        case let text as String: text
        case let number as Int: String(number)
        case let number as Double: String(number)
        case nil: ""
        case let other?: "\(other)"
        }
    }

    static func flag(_ value: Any?) -> Bool { (value as? Bool) ?? false }

    static func list(_ value: Any?) -> [[String: Any]] { (value as? [[String: Any]]) ?? [] }

    /// A chart made by `Charts` (its dictionary), as an SVG figure.
    static func chart(_ chart: [String: Any]) -> String {
        let id = escape(string(chart["id"]))
        var html = "<figure class=\"card\">\n"
        if flag(chart["heading"]) { html += "<h3 class=\"chart-heading\" aria-hidden=\"true\">\(escape(string(chart["title"])))</h3>\n" }
        html += "<svg class=\"chart\" viewBox=\"0 0 \(string(chart["width"])) \(string(chart["height"]))\" role=\"img\" "
        html += "aria-labelledby=\"\(id)-title \(id)-desc\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        html += "<title id=\"\(id)-title\">\(escape(string(chart["title"])))</title>\n<desc id=\"\(id)-desc\">\(escape(string(chart["desc"])))</desc>\n"
        for line in list(chart["axis"]) {
            html += "<line x1=\"\(string(line["x1"]))\" y1=\"\(string(line["y1"]))\" x2=\"\(string(line["x2"]))\" y2=\"\(string(line["y2"]))\" stroke=\"#56606b\" stroke-width=\"1\"/>\n"
        }
        for label in list(chart["labels"]) {
            html += "<text x=\"\(string(label["x"]))\" y=\"\(string(label["y"]))\" text-anchor=\"\(string(label["anchor"]))\">\(escape(string(label["text"])))</text>\n"
        }
        for rect in list(chart["rects"]) {
            html += "<rect x=\"\(string(rect["x"]))\" y=\"\(string(rect["y"]))\" width=\"\(string(rect["w"]))\" height=\"\(string(rect["h"]))\" fill=\"\(string(rect["fill"]))\""
            if flag(rect["pattern"]) { html += " stroke=\"#0b0c0c\" stroke-width=\"0.5\"" }
            html += "><title>\(escape(string(rect["tip"])))</title></rect>\n"
        }
        for slice in list(chart["slices"]) {
            html += "<path d=\"\(string(slice["d"]))\" fill=\"\(string(slice["fill"]))\" stroke=\"#fff\" stroke-width=\"2\"><title>\(escape(string(slice["tip"])))</title></path>\n"
        }
        for line in list(chart["lines"]) {
            html += "<polyline points=\"\(string(line["points"]))\" fill=\"none\" stroke=\"\(string(line["stroke"]))\" stroke-width=\"2.5\" stroke-linecap=\"round\" stroke-linejoin=\"round\""
            if let dash = line["dash"] as? String { html += " stroke-dasharray=\"\(dash)\"" }
            html += "><title>\(escape(string(line["tip"])))</title></polyline>\n"
        }
        html += "</svg>\n"
        if let legend = chart["legend"] as? [String: Any] {
            html += "<figcaption>"
            for item in list(legend["items"]) {
                html += "<span class=\"legend-item\"><span class=\"swatch \(escape(string(item["swatch"])))\" aria-hidden=\"true\"></span>\(escape(string(item["label"])))</span> "
            }
            html += "</figcaption>"
        }
        return html + "\n</figure>\n"
    }

    /// A table made by `Charts.table`: a caption, column headers, the first cell of each row a row header.
    static func table(_ table: WebTable) -> String {
        var html = "<div class=\"table-wrap\">\n<table>\n<caption>"
        html.reserveCapacity(256 + table.rows.count * table.columns.count * 32)
        html += escape(table.caption)
        html += "</caption>\n<thead><tr>"
        for column in table.columns {
            html += column.num ? "<th scope=\"col\" class=\"num\">" : "<th scope=\"col\">"
            html += escape(column.label)
            html += "</th>"
        }
        html += "</tr></thead>\n<tbody>\n"
        for row in table.rows {
            html += "<tr>"
            for (index, text) in row.enumerated() {
                if index == 0 {
                    html += "<th scope=\"row\">"
                    html += escape(text)
                    html += "</th>"
                } else {
                    html += table.columns.indices.contains(index) && table.columns[index].num ? "<td class=\"num\">" : "<td>"
                    html += escape(text)
                    html += "</td>"
                }
            }
            html += "</tr>\n"
        }
        return html + "</tbody>\n</table>\n</div>\n"
    }
}

/// A table of figures beside a chart: a caption, the columns (figures right-aligned), and the
/// rows, whose first cell heads its row.
struct WebTable {
    var caption: String
    var columns: [(label: String, num: Bool)]
    var rows: [[String]]
}

extension Dictionary where Key == String, Value == Any {
    /// The same without its empty texts: in swift-mustache an empty string opens a `{{#key}}`
    /// section, so an optional text (an entry's tags, an episode's notes) must be left out.
    func droppingEmptyText() -> [String: Any] { filter { ($0.value as? String)?.isEmpty != true } }
}
