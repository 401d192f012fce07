import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation

/// HTML written directly for the parts of a page with many repeated elements (charts and
/// their tables): the same markup as the `chart` and `table` templates would give, without a
/// template engine's per-value lookups, which cost the dashboard most of its render time.
enum WebHTML {
    /// Text escaped for an element's content or a quoted attribute (`HTMLText.escape`).
    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    /// A chart made by `Charts`, as an SVG figure.
    static func chart(_ chart: WebChart) -> String {
        let id = escape(chart.id)
        var html = "<figure class=\"card\">\n"
        html.reserveCapacity(
            1_024 + (chart.axis.count + chart.labels.count + chart.rects.count + chart.slices.count + chart.lines.count) * 160)
        if chart.heading { html += "<h3 class=\"chart-heading\" aria-hidden=\"true\">\(escape(chart.title))</h3>\n" }
        html += "<svg class=\"chart\" viewBox=\"0 0 \(chart.width) \(chart.height)\" role=\"img\" "
        html += "aria-labelledby=\"\(id)-title \(id)-desc\" xmlns=\"http://www.w3.org/2000/svg\">\n"
        html += "<title id=\"\(id)-title\">\(escape(chart.title))</title>\n<desc id=\"\(id)-desc\">\(escape(chart.desc))</desc>\n"
        for line in chart.axis {
            html +=
                "<line x1=\"\(line.x1)\" y1=\"\(line.y1)\" x2=\"\(line.x2)\" y2=\"\(line.y2)\" stroke=\"#56606b\" stroke-width=\"1\"/>\n"
        }
        for label in chart.labels {
            html += "<text x=\"\(label.x)\" y=\"\(label.y)\" text-anchor=\"\(label.anchor)\">\(escape(label.text))</text>\n"
        }
        for rect in chart.rects {
            html += "<rect x=\"\(rect.x)\" y=\"\(rect.y)\" width=\"\(rect.w)\" height=\"\(rect.h)\" fill=\"\(rect.fill)\""
            if rect.pattern { html += " stroke=\"#0b0c0c\" stroke-width=\"0.5\"" }
            html += "><title>\(escape(rect.tip))</title></rect>\n"
        }
        for slice in chart.slices {
            html +=
                "<path d=\"\(slice.d)\" fill=\"\(slice.fill)\" stroke=\"#fff\" stroke-width=\"2\"><title>\(escape(slice.tip))</title></path>\n"
        }
        for line in chart.lines {
            html +=
                "<polyline points=\"\(line.points)\" fill=\"none\" stroke=\"\(line.stroke)\" stroke-width=\"2.5\" stroke-linecap=\"round\" stroke-linejoin=\"round\""
            if let dash = line.dash { html += " stroke-dasharray=\"\(dash)\"" }
            html += "><title>\(escape(line.tip))</title></polyline>\n"
        }
        html += "</svg>\n"
        if let legend = chart.legend {
            html += "<figcaption>"
            for item in legend {
                html +=
                    "<span class=\"legend-item\"><span class=\"swatch \(escape(item.swatch))\" aria-hidden=\"true\"></span>\(escape(item.label))</span> "
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

/// A chart made by `Charts`: its size, title and description, and its elements, their
/// coordinates already written out (`Charts.number`).
struct WebChart {
    struct Line { var x1, y1, x2, y2: String }
    struct Label { var x, y, anchor, text: String }
    struct Rect {
        var x, y, w, h, fill: String
        /// Outlined as well as filled: a light fill (yellow, missing) must not need its colour to be seen.
        var pattern = false
        var tip: String
    }
    struct Slice { var d, fill, tip: String }
    struct Polyline {
        var points, stroke: String
        var dash: String? = nil
        var tip: String
    }

    var id, title, desc, width, height: String
    /// A visible heading above the chart (the episode summary's charts).
    var heading = false
    var axis: [Line] = []
    var labels: [Label] = []
    var rects: [Rect] = []
    var slices: [Slice] = []
    var lines: [Polyline] = []
    var legend: [(swatch: String, label: String)]? = nil
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
