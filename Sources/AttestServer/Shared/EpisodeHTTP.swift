import AttestFoundation
import AttestPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import NIOCore
import Surveys
import Tenancy

/// What the API and the pages both need of a campus for its episodes.
package enum EpisodeHTTP {
    /// Starts an episode with the weather where it began (within the context provider's budget).
    package static func settings(_ campus: Campus) -> JSONValue? {
        campus.settings.bytes.withUnsafeBytes { try? JSONValue(parsing: $0) }
    }
}
