import AttestCLI

await AttestCommand.runAsRoot()
