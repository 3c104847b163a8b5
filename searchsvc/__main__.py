from searchsvc.cli import main

main()
