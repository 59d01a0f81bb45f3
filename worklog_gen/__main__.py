from worklog_gen.cli import main

main()
