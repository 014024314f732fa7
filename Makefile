# MediaRoute's entry points. `make demo` and `make test` are the README's Quick start; CI runs `make test`.
#   make demo               install missing system packages, build, and run the demo (mediaroute-demo)
#   make test               install missing system packages, a short fuzz pass, the whole test suite
#   make bench NAME=ipc-rtt one benchmark (release build); `make bench` lists them
#   make fuzz SECONDS=600   the libFuzzer target over the IPC decoders, for as long as you like
#   make soak CYCLES=200    the soak test (apps, the CLI, two drivers, a crash) for as many cycles as you like
#   make docs               DocC for MediaDevice, AVSystemRouting and NowPlaying into .build/docs; a warning fails it
#   make build              the daemon, the CLI and the drivers, release build (CONFIGURATION=debug for a debug one)
#   make install            install them, their manifests and the systemd units (PREFIX=/usr/local, DESTDIR); no build
#   make uninstall          remove exactly what install put
SHELL := /bin/bash
SECONDS ?= 60
CYCLES ?= 100

.PHONY: demo test deps bench fuzz soak docs build install uninstall

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

# The suites that measure real time (pitch, gaps, frame pace, a ring written at its real pace,
# picture against sound, idle timers) or the process's peak memory: run alone, one at a time.
REALTIME_TESTS = ReferenceProtocolTests\.(SoundOutputTests|ReceiverJitterTests|MirroringTests|HostileLANTests|URLVideoWindowTests|StreamingTests)|MediaCodecsTests\.PlayoutOverUDPTests|ScreenCaptureTests\.(ScreenCaptureTests|PipeWireScreenStreamTests)|DLNATests\.MediaServerMemoryTests

test: deps
	@probe=mediaroute-probe-$$$$; ip netns add $$probe 2>/dev/null && ip netns delete $$probe || { \
	    echo "make test needs root with CAP_SYS_ADMIN: the tests run private Avahi daemons in network namespaces of their own"; exit 1; }
	IPC/Fuzz/run-fuzzer.sh 20 2>&1 | grep -E '^(Done|stat::|==[0-9]+==ERROR|SUMMARY)|error:' ; test $${PIPESTATUS[0]} -eq 0
	swift build --build-tests
	@# The plugin tests first, alone: their scratch package's first build (over a minute of both
	@# CPUs on a fresh clone) would otherwise run beside the timing-sensitive tests. Then the rest in
	@# parallel, but for the real-time ones, which run last, one at a time: they judge sound by its
	@# pitch and gaps and capture by its pace, which a 2-CPU machine cannot keep while mutter renders
	@# in software and x264 encodes beside them.
	@# At most eight tests per CPU at once: all hundred starting together kept the cooperative
	@# pool's two threads busy for seconds, and tests waiting on real daemons (a driver's 5 s
	@# handshake, an HTTP answer) ran out of time while their tasks waited for a thread.
	@log=$$(mktemp /tmp/mediaroute-test-log.XXXXXX); \
	( swift test --skip-build --filter DriverPluginsTests; plugins=$$?; \
	  SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$$(( $$(nproc) * 8 )) \
	  swift test --skip-build --skip DriverPluginsTests --skip '$(REALTIME_TESTS)'; rest=$$?; \
	  swift test --skip-build --no-parallel --filter '$(REALTIME_TESTS)'; exit $$((plugins | rest | $$?)) ) 2>&1 | tee $$log; \
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

# -- Installing (README, "Running it as a service") --
# `make build` as yourself, then `sudo make install`: install never builds, so root leaves no file
# of its own in .build. Layout: programs in $(PREFIX)/bin; drivers and their manifests side by side
# in $(PREFIX)/lib/mediaroute/drivers (a manifest names its executable relative to its own
# directory, so the manifests are installed as they are and name the installed drivers); units in
# $(PREFIX)/lib/systemd/{system,user}, which systemd reads for /usr and /usr/local alike.
# The programs are linked to the Swift runtime of the toolchain that built them (their RUNPATH);
# on a machine without it, build with SWIFT_BUILD_FLAGS=--static-swift-stdlib.
PREFIX ?= /usr/local
CONFIGURATION ?= release
SWIFT_BUILD_FLAGS ?=
BINDIR := $(PREFIX)/bin
DRIVERSDIR := $(PREFIX)/lib/mediaroute/drivers
SYSTEM_UNITDIR := $(PREFIX)/lib/systemd/system
USER_UNITDIR := $(PREFIX)/lib/systemd/user
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
BUILT := .build/$(CONFIGURATION)
PROGRAMS := mediarouted mediaroute
# Every driver in Protocols/, with the executable its manifest names (a bare name, beside it).
DRIVER_MANIFESTS := $(sort $(wildcard Protocols/*/org.mediaroute.*.json))
DRIVER_PROGRAMS := $(foreach m,$(DRIVER_MANIFESTS),$(shell sed -n 's/^ *"executable": *"\([^"/]*\)".*/\1/p' $(m)))
UNITS := Sources/mediarouted/systemd
# The default configuration (every key at its default, commented out): install puts it in
# $(SYSCONFDIR)/mediaroute/ unless a file is there already (an operator's edits are kept), uninstall
# removes it only when unchanged, and the system unit names it with --config.
DEFAULT_CONFIG := Sources/mediarouted/mediarouted.yaml
CONFIG_TARGET := $(SYSCONFDIR)/mediaroute/$(notdir $(DEFAULT_CONFIG))
INSTALLED := $(PROGRAMS:%=$(BINDIR)/%) $(DRIVER_PROGRAMS:%=$(DRIVERSDIR)/%) $(addprefix $(DRIVERSDIR)/,$(notdir $(DRIVER_MANIFESTS))) \
             $(SYSTEM_UNITDIR)/mediarouted.service $(USER_UNITDIR)/mediarouted.service

build:
	@for product in $(PROGRAMS) $(DRIVER_PROGRAMS); do swift build -c $(CONFIGURATION) $(SWIFT_BUILD_FLAGS) --product $$product || exit 1; done

install:
	@test $(words $(DRIVER_PROGRAMS)) -eq $(words $(DRIVER_MANIFESTS)) || { \
	    echo "every manifest in Protocols/ must name its executable by a bare name, installed beside it: $(DRIVER_MANIFESTS)"; exit 1; }
	@for program in $(PROGRAMS) $(DRIVER_PROGRAMS); do test -x $(BUILT)/$$program || { \
	    echo "$(BUILT)/$$program is missing: run \`make build$(if $(filter-out release,$(CONFIGURATION)), CONFIGURATION=$(CONFIGURATION))\` first, as yourself"; exit 1; }; done
	install -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(DRIVERSDIR) $(DESTDIR)$(SYSTEM_UNITDIR) $(DESTDIR)$(USER_UNITDIR)
	install -m 0755 $(PROGRAMS:%=$(BUILT)/%) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(DRIVER_PROGRAMS:%=$(BUILT)/%) $(DESTDIR)$(DRIVERSDIR)/
	install -m 0644 $(DRIVER_MANIFESTS) $(DESTDIR)$(DRIVERSDIR)/
	for kind in system user; do \
	    target=$(DESTDIR)$(PREFIX)/lib/systemd/$$kind/mediarouted.service; \
	    sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DRIVERSDIR@|$(DRIVERSDIR)|g' -e 's|@CONFIG@|$(CONFIG_TARGET)|g' \
	        $(UNITS)/$$kind/mediarouted.service > $$target && chmod 0644 $$target || exit 1; \
	done
	@if [ -n "$(DEFAULT_CONFIG)" ]; then \
	    if [ -e $(DESTDIR)$(CONFIG_TARGET) ]; then echo "kept $(DESTDIR)$(CONFIG_TARGET) as it is"; \
	    else install -D -m 0644 $(DEFAULT_CONFIG) $(DESTDIR)$(CONFIG_TARGET); fi; fi
	@if [ -z "$(DESTDIR)" ]; then echo "Installed. Next: systemctl daemon-reload && systemctl enable --now mediarouted (or, in a desktop session, systemctl --user ...)"; fi

# Removes what install put, then the directories it made that are left empty: its own always, and
# in a staging tree (DESTDIR) every empty one up to DESTDIR.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@if [ -n "$(DEFAULT_CONFIG)" ] && [ -e $(DESTDIR)$(CONFIG_TARGET) ]; then \
	    if cmp -s $(DEFAULT_CONFIG) $(DESTDIR)$(CONFIG_TARGET); then rm -f $(DESTDIR)$(CONFIG_TARGET); \
	    else echo "kept $(DESTDIR)$(CONFIG_TARGET): it was changed since install"; fi; fi
	@rmdir $(DESTDIR)$(DRIVERSDIR) $(DESTDIR)$(PREFIX)/lib/mediaroute 2>/dev/null || true
	@if [ -n "$(DEFAULT_CONFIG)" ]; then rmdir $(DESTDIR)$(SYSCONFDIR)/mediaroute 2>/dev/null || true; fi
	@if [ -n "$(DESTDIR)" ]; then for file in $(INSTALLED) $(if $(DEFAULT_CONFIG),$(CONFIG_TARGET)); do \
	    directory=$$(dirname $(DESTDIR)$$file); \
	    while [ "$$directory" != "$(DESTDIR)" ] && [ "$$directory" != / ]; do \
	        if [ -d "$$directory" ]; then rmdir "$$directory" 2>/dev/null || break; fi; directory=$$(dirname "$$directory"); done; \
	done; fi
