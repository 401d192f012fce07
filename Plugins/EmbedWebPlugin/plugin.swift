import Foundation
import PackagePlugin

/// Embeds a target's files: the pages' templates, static files and texts, the country codes (`Resources` of
/// the target) as `embeddedWebFiles`, and the API's description (`OpenAPI/openapi.yaml`) as
/// `embeddedOpenAPIYAML`, whichever the target has, so the `attest` binary serves them with
/// nothing beside it.
@main
struct EmbedWebPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        var commands: [Command] = []
        let root = target.directoryURL.appending(path: "Resources")
        if FileManager.default.fileExists(atPath: root.path()) {
            var files: [URL] = []
            if let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) {
                for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                    files.append(url)
                }
            }
            let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedWebFiles.swift")
            commands.append(
                .buildCommand(
                    displayName: "Embedding the web pages' files",
                    executable: try context.tool(named: "EmbedFiles").url,
                    arguments: [output.path(), "embeddedWebFiles", root.path()] + files.map { $0.path() },
                    inputFiles: files,
                    outputFiles: [output]
                ))
        }
        let api = target.directoryURL.appending(path: "OpenAPI/openapi.yaml")
        if FileManager.default.fileExists(atPath: api.path()) {
            let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedOpenAPI.swift")
            commands.append(
                .buildCommand(
                    displayName: "Embedding openapi.yaml",
                    executable: try context.tool(named: "EmbedSQL").url,
                    arguments: [api.path(), output.path(), "embeddedOpenAPIYAML"],
                    inputFiles: [api],
                    outputFiles: [output]
                ))
        }
        return commands
    }
}
