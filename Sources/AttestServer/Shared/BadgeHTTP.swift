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

/// A badge verification's body, as the API and the scanner page send it.
package enum BadgeHTTP {
    /// A verification request's one field, `token`, as the API and the scanner page send it.
    package static func token(_ request: Request, _ context: AttestRequestContext) async throws -> String {
        var reader = ObjectReader(
            try await request.jsonObject(context: context), fields: ["token"], unknown: "is not a field of a verification request")
        let token = reader.text(
            "token", required: "the badge token the member shows (a string)",
            wrong: "is required: the badge token the member shows (a string)")
        if token?.isEmpty == true { reader.problem("token", "is required: the badge token the member shows (a string)") }
        try reader.finish()
        guard let token else { throw Problem.validation(reader.problems) }
        return token
    }
}
