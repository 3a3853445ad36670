from spreadbus.cli import main

raise SystemExit(main())
