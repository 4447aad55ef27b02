from titanium_gateway.cli import main

raise SystemExit(main())
