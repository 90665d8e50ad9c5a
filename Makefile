# kcd — see README.md. `make run` tries it out, `make test` runs every test.
GO      ?= go
MODULE  := github.com/kcd-project/kcd
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X $(MODULE)/internal/version.Commit=$(COMMIT)
RUN_DIR ?= .data/run

.PHONY: all javahost build install run test test-unit test-integration fuzz chaos lint testenv-up testenv-down cluster cluster-down bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kcd ./cmd/kcd
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kcctl ./cmd/kcctl
	@scripts/javahost.sh build bin/javahost

# The Java connector host alone, into bin/javahost (kcd's default
# --java-host-dir beside bin/kcd); needs Java 17 and Maven.
javahost:
	scripts/javahost.sh build bin/javahost --required

# kcd and kcctl into $(DESTDIR)$(PREFIX)/bin, and kcctl's shell completions
# for bash and zsh beside them in share/.
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 0755 bin/kcd bin/kcctl $(DESTDIR)$(PREFIX)/bin/
	bin/kcctl completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/kcctl
	bin/kcctl completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_kcctl

# A single node with an embedded dev broker: nothing else to install.
run: build
	bin/kcd --dev-kafka --data-dir $(RUN_DIR)

# Everything: lint, unit tests with -race, then the integration tests against
# the real services that scripts/testenv starts (and stops again) itself.
test:
	scripts/test.sh

# Unit tests only: no services, fast.
test-unit:
	$(GO) test -race -short ./...

# Integration tests only, against an environment that is already up.
test-integration:
	$(GO) test -race -count=1 -timeout 20m -run '^TestIntegration' ./...

# Every Fuzz target for FUZZTIME each (make test runs them for 2s each);
# FUZZ=regexp picks targets by name, FUZZ_JOBS how many run at a time.
# A failing input lands in the package's testdata/fuzz/ (docs/fuzzing.md).
FUZZTIME ?= 60s
FUZZ     ?= .
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh '$(FUZZ)'

# The fault schedule against a 4-node cluster on the test environment's Kafka
# (docs/testing.md): CHAOS_DURATION of faults, then the data is checked;
# report in .data/chaos/report.txt. make test runs it for 2 minutes.
CHAOS_DURATION ?= 10m
chaos:
	CHAOS_DURATION=$(CHAOS_DURATION) scripts/chaos.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# A three-node cluster on loopback (REST on 18081-18083), data in .cluster/.
cluster: build
	scripts/cluster.sh up

cluster-down:
	scripts/cluster.sh down

testenv-up:
	scripts/testenv up

testenv-down:
	scripts/testenv down

# Benchmarks of the metadata cluster: writes/s, failover time, idle memory
# (a few minutes; figures and how to read them in docs/benchmarks.md).
bench:
	bench/run.sh

clean:
	-scripts/testenv down
	-scripts/cluster.sh clean
	rm -rf bin .data
