import AsyncHTTPClient
import AttestPlugins
import Foundation
import NIOCore

/// The HTTP client plugins borrow (`PluginContext.http`), on async-http-client.
public struct AsyncPluginHTTPClient: PluginHTTPClient {
    let client: HTTPClient
    /// Responses past this are refused (plugins read small JSON answers).
    let maxResponseBytes: Int

    public init(client: HTTPClient = .shared, maxResponseBytes: Int = 4 << 20) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: PluginHTTPRequest) async throws -> PluginHTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = .init(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        // At most an hour: a plugin's timeout never overflows nanoseconds.
        let seconds = min(max(request.timeout.components.seconds, 0), 3_600)
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + request.timeout.components.attoseconds / 1_000_000_000)
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            let body: ByteBuffer
            do { body = try await response.body.collect(upTo: maxResponseBytes) } catch { throw PluginHTTPError.responseTooLarge }
            return PluginHTTPResponse(status: Int(response.status.code), body: Data(body.readableBytesView))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw PluginHTTPError.timedOut
        } catch let error as PluginHTTPError {
            throw error
        } catch {
            throw PluginHTTPError.connectionFailed("\(error)")
        }
    }
}
