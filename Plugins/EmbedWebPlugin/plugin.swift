import Foundation
import PackagePlugin

/// Embeds the web pages' templates and static files (`Web/Resources` of the target) into the
/// target as `embeddedWebFiles`, and the API's description (`OpenAPI/openapi.yaml`) as
/// `embeddedOpenAPIYAML`, so the `attest` binary serves both with nothing beside it.
@main
struct EmbedWebPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = target.directoryURL.appending(path: "Web/Resources")
        var files: [URL] = []
        if let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) {
            for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                files.append(url)
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedWebFiles.swift")
        let api = target.directoryURL.appending(path: "OpenAPI/openapi.yaml")
        let apiOutput = context.pluginWorkDirectoryURL.appending(path: "EmbeddedOpenAPI.swift")
        return [
            .buildCommand(
                displayName: "Embedding the web pages' files",
                executable: try context.tool(named: "EmbedFiles").url,
                arguments: [output.path(), "embeddedWebFiles", root.path()] + files.map { $0.path() },
                inputFiles: files,
                outputFiles: [output]
            ),
            .buildCommand(
                displayName: "Embedding openapi.yaml",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [api.path(), apiOutput.path(), "embeddedOpenAPIYAML"],
                inputFiles: [api],
                outputFiles: [apiOutput]
            ),
        ]
    }
}
