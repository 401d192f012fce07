import Foundation

/// The figures a fault test prints (DESIGN §9, issue 33): one line each, the same shape for
/// every fault, so a run's output gives the README's reliability table.
public enum FaultFigures {
    public static func report(
        _ fault: String, sent: Int, acknowledged: Int, found: Int, lost: Int, duplicates: Int, unavailable: Int, recovery: Duration?,
        detail: String? = nil
    ) {
        let recovered =
            recovery.map { String(format: "%.1f s", Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18) } ?? "-"
        print(
            "FAULT \(fault): sent \(sent), acknowledged \(acknowledged), found \(found), lost \(lost), duplicates \(duplicates), "
                + "503s \(unavailable), recovered in \(recovered)" + (detail.map { "; \($0)" } ?? ""))
    }
}
