import AttestPlugins
import BuiltinPlugins
import Foundation
import Testing

@Suite("Community data: the cumulative CSV, the figures and their thresholds")
struct CommunityFiguresTests {
    static let csv = """
        date,county,state,fips,cases,deaths
        2026-10-01,Alpha,Testland,99001,100,1
        2026-10-01,"Beta, North",Testland,99002,50,0
        2026-10-01,New Town,Testland,,10,0
        2026-10-01,Unknown,Testland,,5,0
        2026-10-02,Alpha,Testland,99001,110,1
        2026-10-04,Alpha,Testland,99001,130,2
        2026-10-05,Alpha,Testland,99001,125,2
        2026-10-05,Alpha,Testland,99001,127,2
        2026-10-06,Alpha,Testland,99001,,3
        2026-10-02,"Beta, North",Testland,99002,49,0
        2026-10-02,New Town,Testland,,12,0

        """

    func days(_ series: CommunitySeries?) -> [String] {
        (series?.days ?? []).map { "\($0.date) \($0.newCases) \($0.newDeaths)" }
    }

    @Test func runningTotalsBecomeDailyFiguresWithGapsCorrectionsAndRegionsWithoutFIPS() throws {
        let population = "fips,population\n99001,200000\n\"testland:new-town\",5000\n"
        let dataset = try CommunityDataset.parseCumulativeCSV(Data(Self.csv.utf8), population: Data(population.utf8))
        #expect(dataset.regionCount == 3)  // Unknown is not a place
        // The first date's figure is its total; 10-03 is missing (10-04 carries it); 10-05 was
        // given twice (the later row counts) and went down (a correction); 10-06's empty cases
        // keep the total.
        #expect(
            days(dataset.series(region: "99001")) == [
                "2026-10-01 100 1", "2026-10-02 10 0", "2026-10-04 20 1", "2026-10-05 -3 0", "2026-10-06 0 1",
            ])
        #expect(dataset.series(region: "99001")?.region == CommunityRegion(id: "99001", name: "Alpha, Testland", population: 200_000))
        // A quoted name with a comma; a county without FIPS gets state:county.
        #expect(dataset.series(region: "99002")?.region.name == "Beta, North, Testland")
        #expect(days(dataset.series(region: "99002")) == ["2026-10-01 50 0", "2026-10-02 -1 0"])
        #expect(dataset.series(region: "testland:new-town")?.region.population == 5_000)
        #expect(dataset.series(region: "nowhere") == nil)
        #expect(dataset.latestDate == LocalDate("2026-10-06"))

        #expect(dataset.regions(matching: "beta", limit: 10).map(\.id) == ["99002"])
        #expect(dataset.regions(matching: "TESTLAND", limit: 2).map(\.name) == ["Alpha, Testland", "Beta, North, Testland"])
        #expect(dataset.regions(matching: "", limit: 10).count == 3)
        #expect(dataset.regions(matching: "zzz", limit: 10).isEmpty)

        let states = try CommunityDataset.parseCumulativeCSV(Data("date,state,fips,cases,deaths\n2026-10-01,Testland,99,7,0\n".utf8))
        #expect(states.series(region: "99")?.region.name == "Testland")
    }

    @Test func aBadRowIsNamedByLineAndNothingIsKept() {
        func refusal(_ text: String) -> String {
            do {
                _ = try CommunityDataset.parseCumulativeCSV(Data(text.utf8))
                return "accepted"
            } catch let error as CommunityDataFileError {
                return "\(error.line): \(error.reason)"
            } catch {
                return "\(error)"
            }
        }
        let header = "date,county,state,fips,cases,deaths\n"
        #expect(refusal(header + "2026-10-01,A,S,1,5,0\n2026-13-01,A,S,1,6,0\n").hasPrefix("3: date must be YYYY-MM-DD"))
        #expect(refusal(header + "2026-10-01,A,S,1,-5,0\n").hasPrefix("2: cases must be a whole number"))
        #expect(refusal(header + "2026-10-01,A,S,1,5,x\n").hasPrefix("2: deaths must be a whole number"))
        #expect(refusal(header + "2026-10-01,A,S,1,99999999999,0\n").hasPrefix("2: cases must be"))
        #expect(refusal(header + "2026-10-01,A,,1,5,0\n").hasPrefix("2: state must be"))
        #expect(refusal(header + "2026-10-01,A,S,1,5,0,extra\n").hasPrefix("2: more fields"))
        #expect(refusal(header + "2026-10-01,A,S,\"bad fips\",5,0\n").hasPrefix("2: fips must be"))
        #expect(refusal("day,cases\n").hasPrefix("1: the header needs a date column"))
        #expect(refusal("").hasPrefix("1: the file is empty"))
        #expect(refusal(header + "2026-10-01,\"A,S,1,5,0\n").contains("UnclosedQuote"))
        #expect(throws: CommunityDataFileError.self) { try CommunityDataset.parsePopulation(Data("fips,population\n1,-3\n".utf8)) }
        #expect(throws: CommunityDataFileError.self) { try CommunityDataset.parsePopulation(Data("name,people\n".utf8)) }
    }

    /// A series of `perDay` new cases a day, oldest first, ending 2026-11-14.
    func series(_ perDay: [Int], population: Int? = 100_000, skipping: Set<Int> = []) -> CommunitySeries {
        let end = LocalDate("2026-11-14")!
        let days = perDay.enumerated().compactMap { index, cases -> CommunityDay? in
            skipping.contains(index) ? nil : CommunityDay(date: end.adding(days: index - perDay.count + 1), newCases: cases, newDeaths: 0)
        }
        return CommunitySeries(region: CommunityRegion(id: "r", name: "R", population: population), days: days)
    }

    @Test func averagesPer100kTrendAndRiskAgreeWithHandComputedValues() {
        let standard = CommunityRiskSettings()
        // Week before: 70; this week: 7 × 20 = 140 → average 20, per 100,000 (of 200,000) 10.
        let figures = CommunityFigures(
            series: series(Array(repeating: 10, count: 7) + Array(repeating: 20, count: 7), population: 200_000), settings: standard)
        #expect(figures.asOf == LocalDate("2026-11-14"))
        #expect(figures.newCases7DayAverage == 20)
        #expect(figures.per100k == 10)
        #expect(figures.risk == .high)  // 10 is where high begins
        #expect(figures.trend == .rising)

        // A date not reported counts 0: 6 × 20 over 7.
        let gap = CommunityFigures(series: series(Array(repeating: 20, count: 14), skipping: [10]), settings: standard)
        #expect(gap.newCases7DayAverage == 120.0 / 7)
        // Corrections below zero: the week's total is not negative.
        let corrected = CommunityFigures(series: series(Array(repeating: 1, count: 13) + [-50]), settings: standard)
        #expect(corrected.newCases7DayAverage == 0 && corrected.risk == .low && corrected.trend == .falling)

        // Too few days: no average before 7 days of reports, no trend before 14.
        let short = CommunityFigures(series: series([5, 5, 5, 5, 5, 5]), settings: standard)
        #expect(short.asOf != nil && short.newCases7DayAverage == nil && short.risk == nil && short.trend == nil)
        let week = CommunityFigures(series: series(Array(repeating: 5, count: 7)), settings: standard)
        #expect(week.newCases7DayAverage == 5 && week.trend == nil)
        // No population: an average, but no per-100,000 figure and no risk level.
        let unknown = CommunityFigures(series: series(Array(repeating: 5, count: 7), population: nil), settings: standard)
        #expect(unknown.newCases7DayAverage == 5 && unknown.per100k == nil && unknown.risk == nil)
        #expect(CommunityFigures(series: series([]), settings: standard).asOf == nil)
    }

    @Test func trendAndRiskChangeExactlyAtTheirEdges() {
        func trend(before: Int, now: Int) -> CommunityTrend? {
            // Spread each week's total over its first day: only totals count.
            CommunityFigures(
                series: series([before] + Array(repeating: 0, count: 6) + [now] + Array(repeating: 0, count: 6)),
                settings: CommunityRiskSettings()
            ).trend
        }
        #expect(trend(before: 70, now: 77) == .rising)  // exactly 10% higher
        #expect(trend(before: 70, now: 76) == .flat)
        #expect(trend(before: 70, now: 63) == .falling)  // exactly 10% lower
        #expect(trend(before: 70, now: 64) == .flat)
        #expect(trend(before: 0, now: 1) == .rising)
        #expect(trend(before: 0, now: 0) == .flat)

        let standard = CommunityRiskSettings()
        #expect(standard.level(per100k: 0) == .low)
        #expect(standard.level(per100k: 0.999) == .low)
        #expect(standard.level(per100k: 1) == .medium)
        #expect(standard.level(per100k: 9.99) == .medium)
        #expect(standard.level(per100k: 10) == .high)
        #expect(standard.level(per100k: 25) == .veryHigh)
        #expect(standard.level(per100k: 74.9) == .veryHigh)
        #expect(standard.level(per100k: 75) == .severe)
        // Through the figures: 7 cases a week in 100,000 people is exactly 1 a day per 100,000.
        #expect(CommunityFigures(series: series(Array(repeating: 1, count: 7)), settings: standard).risk == .medium)
        #expect(CommunityFigures(series: series([0] + Array(repeating: 1, count: 6)), settings: standard).risk == .low)

        let strict = CommunityRiskSettings(thresholds: [0.5, 2, 4, 8])
        #expect(strict.level(per100k: 1) == .medium && strict.level(per100k: 8) == .severe)
    }

    @Test func campusSettingsAreCheckedAndGuidanceFollowsTheLanguageAsked() throws {
        let settings = try CommunityRiskSettings(
            settings: try JSONValue(
                parsing: Data(
                    #"{"riskThresholds": [2, 20, 40, 80], "guidance": {"medium": {"en": "Mask up indoors.", "es": "Use mascarilla en interiores."}, "low": "All clear."}, "url": "ignored"}"#
                        .utf8)))
        #expect(settings.thresholds == [2, 20, 40, 80])
        #expect(settings.guidance(for: .medium, languages: ["es-MX", "en"]) == "Use mascarilla en interiores.")
        #expect(settings.guidance(for: .medium, languages: ["fr"]) == "Mask up indoors.")
        #expect(settings.guidance(for: .low, languages: ["es"]) == "All clear.")
        #expect(settings.guidance(for: .severe, languages: ["en"]) == nil)

        func refused(_ json: String) -> String? {
            do {
                _ = try CommunityRiskSettings(settings: try JSONValue(parsing: Data(json.utf8)))
                return nil
            } catch let error as PluginSettingsError { return error.message } catch { return "\(error)" }
        }
        #expect(refused(#"{"riskThresholds": [1, 10, 25]}"#)?.contains("four numbers") == true)
        #expect(refused(#"{"riskThresholds": [1, 25, 10, 75]}"#)?.contains("must go up") == true)
        #expect(refused(#"{"riskThresholds": [1, 10, 25, "a"]}"#)?.contains("numbers from 0") == true)
        #expect(refused(#"{"guidance": {"extreme": "Stay in."}}"#)?.contains("unknown risk level \"extreme\"") == true)
        #expect(refused(#"{"guidance": {"low": ""}}"#)?.contains("1 to 500 characters") == true)
        #expect(refused(#"{"guidance": {"low": {"en": 3}}}"#)?.contains("texts by language") == true)
        #expect(refused(#"{"guidance": "be careful"}"#)?.contains("object of risk levels") == true)

        let registry = PluginRegistry.builtin
        #expect(registry.communityDataProviderIDs == ["csv-timeseries", "imported", "json-feed"])
        #expect(throws: PluginSettingsError.self) { _ = try registry.makeCommunityDataProvider(id: "imported", settings: .null) }
        #expect(throws: PluginSettingsError.self) { _ = try registry.makeCommunityDataProvider(id: "csv-timeseries", settings: .null) }
        #expect(throws: PluginSettingsError.self) {
            _ = try registry.makeCommunityDataProvider(id: "csv-timeseries", settings: .object(["file": .string("relative.csv")]))
        }
        #expect(throws: PluginSettingsError.self) {
            _ = try registry.makeCommunityDataProvider(id: "csv-timeseries", settings: .object(["url": .string("ftp://x.example/a.csv")]))
        }
        #expect(throws: PluginSettingsError.self) { _ = try registry.makeCommunityDataProvider(id: "nope", settings: .null) }
        #expect(try registry.makeCommunityDataProvider(id: "imported", settings: .object(["dataset": .string("us-counties")])) == nil)
        #expect(try registry.makeCommunityDataProvider(id: "csv-timeseries", settings: .object(["file": .string("/srv/a.csv")])) != nil)
    }

    @Test func theJSONFeedShapeIsReadAndItsNonsenseRefused() throws {
        let feed =
            #"{"regions": [{"id": "x1", "name": "Xville", "population": 1000, "days": [{"date": "2026-11-02", "newCases": 4, "newDeaths": 0, "tests": 40}, {"date": "2026-11-01", "newCases": 3, "newDeaths": 1}]}]}"#
        let dataset = try CommunityJSONFeedProvider.parse(Data(feed.utf8))
        let series = try #require(dataset.series(region: "x1"))
        #expect(series.days.map(\.date.description) == ["2026-11-01", "2026-11-02"])
        #expect(series.days.map(\.tests) == [nil, 40])
        #expect(series.days.map(\.admissions) == [nil, nil])
        #expect(series.region.population == 1000)
        #expect(throws: PluginSettingsError.self) { _ = try CommunityJSONFeedProvider.parse(Data("[1, 2]".utf8)) }
        #expect(throws: PluginSettingsError.self) {
            _ = try CommunityJSONFeedProvider.parse(Data(#"{"regions": [{"id": "bad id", "name": "A", "days": []}]}"#.utf8))
        }
        #expect(throws: PluginSettingsError.self) {
            _ = try CommunityJSONFeedProvider.parse(
                Data(#"{"regions": [{"id": "a", "name": "A", "days": [{"date": "yesterday", "newCases": 1, "newDeaths": 0}]}]}"#.utf8))
        }
    }
}
