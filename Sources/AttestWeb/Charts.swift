import AttestPlugins
import AttestServer
import Community
import Foundation
import Surveys
import Tenancy

/// Server-made SVG charts, each with a `<title>`, a `<desc>` and a data table beside it
/// (colour never carries a figure alone), as template data for `chart` and `table`.
enum Charts {
    static let fills = [
        "green": "#00703c", "yellow": "#ffdd00", "red": "#d4351c", "gray": "#6f777b",
        "ontime": "#00703c", "late": "#f47738", "missing": "#b1b4b6",
    ]
    /// Line colours and dash patterns, so lines differ by more than colour.
    static let strokes = [
        "#1d70b8", "#d4351c", "#00703c", "#912b88", "#f47738", "#0b0c0c", "#5694ca", "#85994b", "#b58840", "#6f72af", "#28a197", "#f499be",
    ]
    static let dashes = ["", "6 3", "2 2", "8 3 2 3", "1 3"]

    struct Plot {
        var width = 720.0, height = 280.0, left = 44.0, right = 16.0, top = 12.0, bottom = 44.0
        var innerWidth: Double { width - left - right }
        var innerHeight: Double { height - top - bottom }
    }

    /// One decimal, as `%.1f` writes it (halves to even), without `String(format:)`, which a
    /// 30-day dashboard called thousands of times: a third of its render time.
    static func number(_ value: Double) -> String { oneDecimal(value) }

    /// The y axis (0 to `top`) with a few labelled ticks, and the x axis.
    static func axes(_ plot: Plot, top: Double, suffix: String = "") -> (axis: [WebChart.Line], labels: [WebChart.Label]) {
        var axis: [WebChart.Line] = [
            .init(x1: number(plot.left), y1: number(plot.top), x2: number(plot.left), y2: number(plot.top + plot.innerHeight)),
            .init(
                x1: number(plot.left), y1: number(plot.top + plot.innerHeight), x2: number(plot.left + plot.innerWidth),
                y2: number(plot.top + plot.innerHeight)),
        ]
        var labels: [WebChart.Label] = []
        for step in 0...4 {
            let value = top * Double(step) / 4, y = plot.top + plot.innerHeight * (1 - Double(step) / 4)
            labels.append(.init(x: number(plot.left - 4), y: number(y + 4), anchor: "end", text: WebFormat.percent(value) + suffix))
            if step > 0 { axis.append(.init(x1: number(plot.left - 3), y1: number(y), x2: number(plot.left), y2: number(y))) }
        }
        return (axis, labels)
    }

    /// Day labels under the x axis: every day when few, else about eight.
    static func dayLabels(_ dates: [LocalDate], plot: Plot, slot: Double) -> [WebChart.Label] {
        let every = max(1, (dates.count + 7) / 8)  // about eight labels, whatever the range
        return dates.enumerated().compactMap { index, date in
            guard index % every == 0 || index == dates.count - 1 else { return nil }
            let text = String(date.description.dropFirst(5))  // MM-DD
            return .init(
                x: number(plot.left + slot * (Double(index) + 0.5)), y: number(plot.top + plot.innerHeight + 16), anchor: "middle",
                text: text)
        }
    }

    /// Stacked bars: per day, segments of (key, value, label), scaled to `top`.
    static func stackedBars(
        id: String, title: String, desc: String, dates: [LocalDate], segments: [[(key: String, value: Double, label: String)]], top: Double,
        suffix: String, legend: [(swatch: String, label: String)]
    ) -> WebChart {
        let plot = Plot()
        let slot = plot.innerWidth / Double(max(dates.count, 1)), barWidth = max(2, slot * 0.7)
        var rects: [WebChart.Rect] = []
        for (index, day) in segments.enumerated() {
            var y = plot.top + plot.innerHeight
            for segment in day where segment.value > 0 && top > 0 {
                let height = plot.innerHeight * min(segment.value / top, 1)
                y -= height
                rects.append(
                    .init(
                        x: number(plot.left + slot * Double(index) + (slot - barWidth) / 2), y: number(y), w: number(barWidth),
                        h: number(height),
                        fill: fills[segment.key] ?? "#6f777b", pattern: segment.key == "yellow" || segment.key == "missing",
                        tip:
                            "\(index < dates.count ? dates[index].description : ""): \(segment.label) \(WebFormat.percent(segment.value))\(suffix)"
                    ))
            }
        }
        let (axis, labels) = axes(plot, top: top, suffix: suffix)
        return WebChart(
            id: id, title: title, desc: desc, width: number(plot.width), height: number(plot.height),
            axis: axis, labels: labels + dayLabels(dates, plot: plot, slot: slot), rects: rects, legend: legend)
    }

    /// A pie of (key, count, label) with a slice per non-zero count.
    static func pie(id: String, title: String, desc: String, slices: [(key: String, count: Int, label: String)]) -> WebChart {
        let total = slices.reduce(0) { $0 + $1.count }
        let cx = 140.0, cy = 140.0, r = 120.0
        var paths: [WebChart.Slice] = []
        var angle = -Double.pi / 2
        for slice in slices where slice.count > 0 && total > 0 {
            let share = Double(slice.count) / Double(total)
            let tip = "\(slice.label): \(slice.count) (\(WebFormat.percent(share * 100))%)"
            if slice.count == total {
                paths.append(
                    .init(
                        d:
                            "M\(number(cx - r)) \(number(cy))a\(number(r)) \(number(r)) 0 1 0 \(number(2 * r)) 0a\(number(r)) \(number(r)) 0 1 0 \(number(-2 * r)) 0Z",
                        fill: fills[slice.key] ?? "#6f777b", tip: tip))
                break
            }
            let end = angle + share * 2 * Double.pi
            let large = share > 0.5 ? 1 : 0
            let d =
                "M\(number(cx)) \(number(cy))L\(number(cx + r * cos(angle))) \(number(cy + r * sin(angle)))"
                + "A\(number(r)) \(number(r)) 0 \(large) 1 \(number(cx + r * cos(end))) \(number(cy + r * sin(end)))Z"
            paths.append(.init(d: d, fill: fills[slice.key] ?? "#6f777b", tip: tip))
            angle = end
        }
        var labels: [WebChart.Label] = []
        if total == 0 { labels.append(.init(x: "140", y: "140", anchor: "middle", text: desc)) }
        return WebChart(
            id: id, title: title, desc: desc, width: "280", height: "280", labels: labels, slices: paths,
            legend: slices.map { (swatch: $0.key, label: "\($0.label): \($0.count)") })
    }

    /// Lines of (name, values per day; nil leaves a gap), on 0…`top`, with a legend in the SVG.
    static func lines(
        id: String, title: String, desc: String, dates: [LocalDate], series: [(name: String, values: [Double?])], top: Double,
        suffix: String
    ) -> WebChart {
        var plot = Plot()
        plot.right = 200
        let slot = plot.innerWidth / Double(max(dates.count, 1))
        var polylines: [WebChart.Polyline] = []
        var labels: [WebChart.Label] = []
        for (index, line) in series.enumerated() {
            let points = line.values.enumerated().compactMap { day, value -> String? in
                guard let value, top > 0 else { return nil }
                let y = plot.top + plot.innerHeight * (1 - min(value / top, 1))
                return number(plot.left + slot * (Double(day) + 0.5)) + "," + number(y)
            }
            let stroke = strokes[index % strokes.count], dash = dashes[index % dashes.count]
            // A lone point is drawn as a dot (a zero-length segment with round caps).
            let drawn = points.count == 1 ? points + points : points
            polylines.append(.init(points: drawn.joined(separator: " "), stroke: stroke, dash: dash.isEmpty ? nil : dash, tip: line.name))
            let y = plot.top + 6 + Double(index) * 18
            polylines.append(
                .init(
                    points: "\(number(plot.width - 190)),\(number(y)) \(number(plot.width - 166)),\(number(y))", stroke: stroke,
                    dash: dash.isEmpty ? nil : dash, tip: line.name))
            labels.append(.init(x: number(plot.width - 160), y: number(y + 4), anchor: "start", text: line.name))
        }
        let (axis, axisLabels) = axes(plot, top: top, suffix: suffix)
        return WebChart(
            id: id, title: title, desc: desc, width: number(plot.width), height: number(max(plot.height, 24 + Double(series.count) * 18)),
            axis: axis, labels: axisLabels + dayLabels(dates, plot: plot, slot: slot) + labels, lines: polylines)
    }

    /// Bars over named categories (months), one value each (nil: no bar), on 0 to a round top.
    static func bars(
        id: String, title: String, desc: String, categories: [String], values: [Double?], fill: String, suffix: String, smallestStep: Double
    ) -> WebChart {
        let plot = Plot()
        let top = niceTop(values.compactMap { $0 }.filter(\.isFinite).max() ?? 0, smallestStep: smallestStep)
        let slot = plot.innerWidth / Double(max(categories.count, 1)), barWidth = max(2, min(slot * 0.6, 60))
        var rects: [WebChart.Rect] = []
        var labels: [WebChart.Label] = []
        for (index, category) in categories.enumerated() {
            let x = plot.left + slot * Double(index)
            labels.append(.init(x: number(x + slot / 2), y: number(plot.top + plot.innerHeight + 16), anchor: "middle", text: category))
            guard index < values.count, let value = values[index], value.isFinite, value > 0 else { continue }
            let height = plot.innerHeight * min(value / top, 1)
            rects.append(
                .init(
                    x: number(x + (slot - barWidth) / 2), y: number(plot.top + plot.innerHeight - height), w: number(barWidth),
                    h: number(height),
                    fill: fill, tip: "\(category): \(WebFormat.percent(value))\(suffix)"))
            labels.append(
                .init(
                    x: number(x + slot / 2), y: number(plot.top + plot.innerHeight - height - 4), anchor: "middle",
                    text: WebFormat.percent(value) + suffix))
        }
        let (axis, axisLabels) = axes(plot, top: top, suffix: suffix)
        return WebChart(
            id: id, title: title, desc: desc, width: number(plot.width), height: number(plot.height), heading: true,
            axis: axis, labels: axisLabels + labels, rects: rects)
    }

    /// A top for an axis of four ticks that holds `highest`: four steps of 1, 2, 2.5 or 5 times
    /// a power of ten, a step no smaller than `smallestStep` (1 for counts: no "0.3 episodes").
    static func niceTop(_ highest: Double, smallestStep: Double) -> Double {
        guard highest.isFinite, highest > 0 else { return smallestStep * 4 }
        let raw = highest / 4
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        let step = [1, 2, 2.5, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        return max(step, smallestStep) * 4
    }

    /// Two values per row (at the start of episodes ● and a day before ■), each row on its own
    /// scale since the rows' units differ, every value written beside its mark.
    static func pairs(
        id: String, title: String, desc: String, rows: [(label: String, first: Double?, second: Double?, unit: String)],
        legend: (String, String)
    ) -> WebChart {
        let left = 170.0, right = 690.0, rowHeight = 58.0, top = 34.0
        var axis: [WebChart.Line] = [], labels: [WebChart.Label] = [], rects: [WebChart.Rect] = [], slices: [WebChart.Slice] = []
        labels.append(.init(x: number(left), y: "16", anchor: "start", text: legend.0 + "   " + legend.1))
        for (index, row) in rows.enumerated() {
            let y = top + rowHeight * Double(index) + 18
            axis.append(.init(x1: number(left), y1: number(y), x2: number(right), y2: number(y)))
            labels.append(.init(x: number(left - 10), y: number(y + 4), anchor: "end", text: row.label))
            let present = [row.first, row.second].compactMap { $0 }.filter(\.isFinite)
            guard let low = present.min(), let high = present.max() else { continue }
            let pad = max((high - low) * 0.5, max(abs(high) * 0.1, 1))
            func x(_ value: Double) -> Double { left + (right - left) * (value - (low - pad)) / ((high + pad) - (low - pad)) }
            if let first = row.first, first.isFinite {
                let cx = x(first), r = 6.0
                slices.append(
                    .init(
                        d:
                            "M\(number(cx - r)) \(number(y))a\(number(r)) \(number(r)) 0 1 0 \(number(2 * r)) 0a\(number(r)) \(number(r)) 0 1 0 \(number(-2 * r)) 0Z",
                        fill: "#1d70b8", tip: "\(row.label), \(legend.0): \(WebFormat.percent(first))\(row.unit)"))
                labels.append(.init(x: number(cx), y: number(y - 10), anchor: "middle", text: WebFormat.percent(first) + row.unit))
            }
            if let second = row.second, second.isFinite {
                let cx = x(second)
                rects.append(
                    .init(
                        x: number(cx - 5), y: number(y - 5), w: "10", h: "10", fill: "#f47738", pattern: true,
                        tip: "\(row.label), \(legend.1): \(WebFormat.percent(second))\(row.unit)"))
                labels.append(.init(x: number(cx), y: number(y + 20), anchor: "middle", text: WebFormat.percent(second) + row.unit))
            }
        }
        return WebChart(
            id: id, title: title, desc: desc, width: "720", height: number(top + rowHeight * Double(rows.count) + 10), heading: true,
            axis: axis, labels: labels, rects: rects, slices: slices)
    }

    /// A table: the first column a row header.
    static func table(caption: String, columns: [(label: String, num: Bool)], rows: [[String]]) -> WebTable {
        WebTable(caption: caption, columns: columns, rows: rows)
    }

    // MARK: The pages' charts

    static func memberStats(days: [StatisticsService.MemberDay], visit: WebVisit, range: DateRange) -> [String: Any] {
        let dates = days.map(\.date)
        let colors: [(key: String, label: String)] = [
            ("green", visit["colorGreen"]), ("yellow", visit["colorYellow"]), ("red", visit["colorRed"]),
        ]
        let bars = stackedBars(
            id: "colors", title: visit["colorShares"],
            desc: visit.format("barsDesc", "\(days.count)", range.from.description, range.to.description),
            dates: dates,
            segments: days.map { day in
                day.suppressed
                    ? []
                    : [
                        ("green", day.green ?? 0, colors[0].label), ("yellow", day.yellow ?? 0, colors[1].label),
                        ("red", day.red ?? 0, colors[2].label),
                    ]
            },
            top: 100, suffix: "%", legend: colors.map { ($0.key, $0.label) })
        func cell(_ value: Double?, _ suppressed: Bool) -> String {
            suppressed || value == nil ? visit["hiddenDay"] : WebFormat.percent(value ?? 0) + "%"
        }
        let colorTable = table(
            caption: visit["colorShares"],
            columns: [(visit["date"], false), (visit["submitted"], true)] + colors.map { ($0.label, true) },
            rows: days.map { day in
                [day.date.description, day.suppressed ? visit["hiddenDay"] : day.submitted.map { String($0) } ?? visit["hiddenDay"]]
                    + [day.green, day.yellow, day.red].map { cell($0, day.suppressed) }
            })
        let symptomIDs = days.first?.symptoms.map(\.id) ?? []
        let symptomTable = table(
            caption: visit["symptomShares"], columns: [(visit["date"], false)] + symptomIDs.map { (WebFormat.words($0), true) },
            rows: days.map { day in [day.date.description] + day.symptoms.map { cell($0.percent, day.suppressed) } })
        return [
            "intro": visit.format("statsIntro", "\(days.count)", visit.campus.name, "\(visit.campus.statsMinCount)"),
            "charts": [bars] as [WebChart], "tables": [colorTable, symptomTable] as [WebTable],
        ]
    }

    /// The campus's home region beside its own figures: the 7-day average of new cases (per
    /// 100,000 when the population is known) over the two weeks ending the latest report, as a
    /// line and a table, with the risk level, trend and source.
    static func addCommunity(_ report: CommunityDirectory.Report, to data: inout [String: Any], visit: WebVisit) {
        guard let asOf = report.figures.asOf else { return }
        let series = CommunitySeries(region: report.region, days: report.days)
        let averages = CommunityFigures.rollingAverages(series, from: asOf.adding(days: -13), through: asOf)
        let perPeople = (report.region.population ?? 0) > 0
        let unit = visit[perPeople ? "communityPer100k" : "communityPerDay"]
        let top = max(1, (averages.compactMap(\.value).max() ?? 0) * 1.2)
        let chart = lines(
            id: "community", title: visit.format("communityTitle", report.region.name),
            desc: visit.format("communityDesc", report.region.name, averages.first?.date.description ?? "", asOf.description) + " (" + unit
                + ")",
            dates: averages.map(\.date), series: [(unit, averages.map(\.value))], top: top, suffix: "")
        let newCases = Dictionary(report.days.map { ($0.date, $0.newCases) }, uniquingKeysWith: { _, last in last })
        let tableData = table(
            caption: visit.format("communityTitle", report.region.name),
            columns: [(visit["date"], false), (visit["communityNewCases"], true), (unit, true)],
            rows: averages.map { item in
                [item.date.description, newCases[item.date].map { String($0) } ?? "–", item.value.map(number) ?? "–"]
            })
        var summary = visit.format(
            "communitySummary", report.figures.risk.map { visit["risk-" + $0.rawValue] } ?? visit["riskUnknown"],
            report.figures.trend.map { visit["trend-" + $0.rawValue] } ?? "–",
            WebFormat.date(asOf, campus: visit.campus, language: visit.language))
        if let guidance = report.guidance { summary += " " + guidance }
        var source = visit.format("communitySource", report.attribution ?? report.source)
        if report.stale { source += " " + visit["communityStale"] }
        data["community"] = [
            "title": visit.format("communityTitle", report.region.name), "summary": summary, "source": source,
            "chartHTML": WebHTML.chart(chart), "tableHTML": WebHTML.table(tableData),
        ]
    }
}
