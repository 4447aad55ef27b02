from titanium_gateway.cli import run

run()
