from harness.cli.commands import main

main()
