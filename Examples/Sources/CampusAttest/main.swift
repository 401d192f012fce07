import AttestCLI
import AttestPlugins
import BuiltinPlugins
import ExamplePlugins

// The built-in plugins, plus this deployment's own; then the whole `attest` command line.
var registry = PluginRegistry.builtin
registry.registerExamplePlugins()
PluginSystem.bootstrap(registry)
await AttestCommand.runAsRoot()
