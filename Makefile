# MediaRoute's entry points. `make demo` and `make test` are the README's Quick start; CI runs `make test`.
#   make demo               install missing system packages, build, and run the demo (mediaroute-demo)
#   make test               install missing system packages, a short fuzz pass, the whole test suite
#   make bench NAME=ipc-rtt one benchmark (release build); `make bench` lists them
#   make fuzz SECONDS=600   the libFuzzer target over the IPC decoders, for as long as you like
#   make soak CYCLES=200    the soak test (apps, the CLI, two drivers, a crash) for as many cycles as you like
#   make docs               DocC for MediaDevice, AVSystemRouting and NowPlaying into .build/docs; a warning fails it
SHELL := /bin/bash
SECONDS ?= 60
CYCLES ?= 100

.PHONY: demo test deps bench fuzz soak docs

deps:
	@missing=$$(grep -vE '^\s*(#|$$)' .ci/apt-packages | while read -r p; do \
	    dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || echo "$$p"; done); \
	if [ -n "$$missing" ]; then \
	    echo "Installing missing packages:" $$missing; \
	    sudo=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    guard=; if [ ! -e /usr/sbin/policy-rc.d ]; then guard=1; \
	        printf '#!/bin/sh\n# make deps: no service starts on install (avahi-daemon, gmediarender would multicast on the real network)\nexit 101\n' \
	            | $$sudo tee /usr/sbin/policy-rc.d >/dev/null && $$sudo chmod 755 /usr/sbin/policy-rc.d; fi; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; status=$$?; \
	    if [ -n "$$guard" ]; then $$sudo rm -f /usr/sbin/policy-rc.d; fi; \
	    exit $$status; \
	fi

demo: deps
	swift build
	.build/debug/mediaroute-demo

test: deps
	@probe=mediaroute-probe-$$$$; ip netns add $$probe 2>/dev/null && ip netns delete $$probe || { \
	    echo "make test needs root with CAP_SYS_ADMIN: the tests run private Avahi daemons in network namespaces of their own"; exit 1; }
	IPC/Fuzz/run-fuzzer.sh 20 2>&1 | grep -E '^(Done|stat::|==[0-9]+==ERROR|SUMMARY)|error:' ; test $${PIPESTATUS[0]} -eq 0
	swift build --build-tests
	@# The plugin tests first, alone: their scratch package's first build (over a minute of both
	@# CPUs on a fresh clone) would otherwise run beside the timing-sensitive tests.
	@log=$$(mktemp /tmp/mediaroute-test-log.XXXXXX); \
	( swift test --skip-build --filter DriverPluginsTests; first=$$?; swift test --skip-build --skip DriverPluginsTests; exit $$((first | $$?)) ) 2>&1 | tee $$log; \
	status=$${PIPESTATUS[0]}; \
	if [ $$status -ne 0 ]; then echo; echo "== What failed (repeated from above) =="; \
	    grep -E '✘|↳|Fatal error' $$log | grep -vE '^✘ Test run|Testing Library Version|Target Platform' | head -80; fi; \
	rm -f $$log; exit $$status

bench: deps
	swift build -c release
	@if [ -z "$(NAME)" ]; then .build/release/mediaroute-bench --help; else .build/release/mediaroute-bench $(NAME); fi

fuzz: deps
	IPC/Fuzz/run-fuzzer.sh $(SECONDS)

soak: deps
	swift build --build-tests
	MEDIAROUTE_SOAK_CYCLES=$(CYCLES) swift test --skip-build --filter SoakTests

# Kept out of `make test` (the articles' Swift is compiled and compared by DocumentationTests there);
# .ci/run runs it after the tests: 10-15 s with the modules built, and a DocC warning fails it.
DOC_TARGETS := MediaDevice AVSystemRouting NowPlaying
docs:
	swift package --allow-writing-to-directory .build/docs generate-documentation $(DOC_TARGETS:%=--target %) \
	    --output-path .build/docs --transform-for-static-hosting --warnings-as-errors
