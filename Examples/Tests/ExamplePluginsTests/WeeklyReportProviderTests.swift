import AttestPlugins
import ExamplePlugins
import Foundation
import Logging
import Testing

@Suite struct WeeklyReportProviderTests {
    let directory = FileManager.default.temporaryDirectory.appending(path: "weekly-\(UUID().uuidString.prefix(8))")
    var file: URL { directory.appending(path: "weekly.csv") }
    let context = PluginContext(http: NoHTTP(), logger: Logger(label: "weekly-report-test"))

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    func write(_ text: String, modified: Date) throws {
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)
    }

    /// The example's own CSV reader: quoted commas, quotes and line breaks, CRLF line ends
    /// (one `Character`, two scalars), the line each record starts on, an unclosed quote refused.
    @Test func theReaderKeepsQuotedFieldsWholeAndCountsLines() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = "a,b\r\n\"x, \"\"y\"\"\",2\r\n\"two\nlines\",3\n\nlast,4"
        let records = try WeeklyReportProvider.records(in: Data(text.utf8))
        #expect(records.map(\.line) == [1, 2, 3, 5, 6])
        #expect(records.map(\.fields) == [["a", "b"], ["x, \"y\"", "2"], ["two\nlines", "3"], [""], ["last", "4"]])
        #expect(throws: WeeklyReportError.self) { _ = try WeeklyReportProvider.records(in: Data("a,\"open\n".utf8)) }
    }

    @Test func weeksAreSpreadOverTheirDaysAndThePlatformFiguresReadThemAsReported() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try write(
            """
            week_ending,region,name,population,cases,deaths
            2026-11-07,river,"River County, Testland",50000,100,3
            2026-11-14,river,"River County, Testland",50000,150,0
            2026-11-14,hill,Hill County,,7,0
            """, modified: Date(timeIntervalSince1970: 1_000))
        let provider = try WeeklyReportProvider(settings: .object(["path": .string(file.path)]))
        let series = try #require(try await provider.series(region: "river", context: context))
        #expect(
            series.days.count == 14 && series.days.first?.date == LocalDate("2026-11-01")
                && series.days.last?.date == LocalDate("2026-11-14"))
        #expect(series.days.prefix(7).map(\.newCases) == [14, 14, 14, 14, 14, 14, 16])  // 100 = 6 × 14 + 16
        #expect(series.days.reduce(0) { $0 + $1.newCases } == 250)
        // The platform's rules: this week 150 over 7 days in 50,000 people; 50% up on the week before.
        let figures = CommunityFigures(series: series, settings: CommunityRiskSettings())
        #expect(figures.newCases7DayAverage == 150.0 / 7 && figures.trend == .rising && figures.risk == .veryHigh)
        #expect(try await provider.regions(matching: "river", limit: 5, context: context).map(\.name) == ["River County, Testland"])
        #expect(try await provider.series(region: "hill", context: context)?.region.population == nil)
        #expect(try await provider.series(region: "lake", context: context) == nil)

        // A new version that does not parse: the last good copy, marked stale.
        try write(
            "week_ending,region,name,population,cases,deaths\nlast week,river,River,1,1,0\n", modified: Date(timeIntervalSince1970: 2_000))
        let stale = try #require(try await provider.series(region: "river", context: context))
        #expect(stale.stale && stale.days == series.days)
    }

    @Test func settingsAndFilesWithoutAGoodCopyAreRefused() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: PluginSettingsError.self) { _ = try WeeklyReportProvider(settings: .object(["path": .string("weekly.csv")])) }
        try write("week,cases\n", modified: Date(timeIntervalSince1970: 1_000))
        let provider = try WeeklyReportProvider(settings: .object(["path": .string(file.path)]))
        await #expect(throws: WeeklyReportError.self) { _ = try await provider.series(region: "river", context: context) }
    }
}
