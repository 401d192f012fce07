import PackagePlugin

/// Embeds the package's `schema.sql` into the target as `embeddedSchemaSQL`, so the
/// `attest` binary carries the schema it migrates to and the file stays the one source.
@main
struct EmbedSchemaPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "schema.sql")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedSchema.swift")
        return [
            .buildCommand(
                displayName: "Embedding schema.sql",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [input.path(), output.path(), "embeddedSchemaSQL"],
                inputFiles: [input],
                outputFiles: [output]
            )
        ]
    }
}
