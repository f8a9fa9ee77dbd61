# PFS top-level build. `make` builds user space (CMake) and the kernel
# module (kbuild); `make test` runs every test level; `make run` starts a
# local file system with default settings.
BUILD ?= build
# Kernel headers: KDIR=..., else the running kernel's, else Debian's
# linux-headers-amd64 (the build machines cannot load modules themselves).
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
                    $(lastword $(sort $(wildcard /usr/src/linux-headers-*-amd64))))
WERROR ?= $(if $(CI),ON,OFF)
DEBUG_INFO ?= $(if $(CI),OFF,ON)
JOBS ?= $(shell nproc)

.PHONY: all deps userspace kmod test unit run stop bench bench-kernel clean print-kdir deb rpm repo cross-arm64 test-install

all: userspace kmod

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DPFS_WERROR=$(WERROR) -DPFS_DEBUG_INFO=$(DEBUG_INFO)

userspace: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

kmod: deps
	@test -d "$(KDIR)" || { echo "no kernel headers found: set KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kmod modules
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kernel/nvfs_mock modules

# The headers the module is built against: tests/kernel boots the matching kernel.
print-kdir:
	@echo $(KDIR)

test: all
	@scripts/run-tests.sh $(BUILD)

bench: all
	cmake --build $(BUILD) --target pfs-bench -j $(JOBS)
	@tests/bench/run-bench.sh $(BUILD)

# pfs-bench in the QEMU guest: pfs.ko beside in-guest NFS and the local disk.
bench-kernel: all
	cmake --build $(BUILD) --target pfs-bench -j $(JOBS)
	@tests/kernel/bench.sh $(BUILD)

# Debian packages (debian/): built by dpkg-buildpackage, checked by lintian,
# collected in $(BUILD)/deb/.
VERSION := $(shell head -n 1 VERSION)
deb:
	@scripts/install-deps.sh --packaging
	dpkg-buildpackage -us -uc -b -j$(JOBS)
	mkdir -p $(BUILD)/deb
	mv ../pfs-*_$(VERSION)_*.deb ../libpfs*_$(VERSION)_*.deb ../pfs_$(VERSION)_*.buildinfo ../pfs_$(VERSION)_*.changes $(BUILD)/deb/
	lintian --fail-on error,warning $(BUILD)/deb/pfs_$(VERSION)_*.changes

# RPM packages (packaging/rpm/pfs.spec) with Debian's rpmbuild, from a
# tarball of HEAD; collected in $(BUILD)/rpm/RPMS/, checked by rpmlint. The
# spec's BuildRequires name Fedora/RHEL packages, which Debian's rpm database
# does not know: --nodeps (install-deps.sh installed their Debian twins).
RPM_TOP := $(CURDIR)/$(BUILD)/rpm
rpm: deps
	@scripts/install-deps.sh --rpm
	rm -rf $(RPM_TOP) && mkdir -p $(RPM_TOP)/SOURCES
	git archive --format=tar.gz --prefix=pfs-$(VERSION)/ -o $(RPM_TOP)/SOURCES/pfs-$(VERSION).tar.gz HEAD
	rpmbuild -bb --nodeps --define "_topdir $(RPM_TOP)" --define "pfs_version $(VERSION)" \
		packaging/rpm/pfs.spec
	rpmlint -c packaging/rpm/rpmlint.toml -r packaging/rpm/pfs.rpmlintrc $(RPM_TOP)/RPMS/*/*.rpm

# Signed apt and yum repositories of the packages above, in $(BUILD)/repo/
# (a key generated for the test in $(BUILD)/repo/gnupg unless
# REPO_GNUPG_HOME names one): packaging/repo/make-repo.sh.
repo: deb rpm
	packaging/repo/make-repo.sh --debs $(BUILD)/deb --rpms $(RPM_TOP)/RPMS --out $(BUILD)/repo \
		$(if $(REPO_GNUPG_HOME),--gnupg-home $(REPO_GNUPG_HOME))

# The install test with everything (`make test` runs it without the DKMS
# rebuild on upgrade inside the guest): tests/kernel/install/; first the
# RPMs, rpmlint's report on them, and their install, verify and erase in a
# node's root (`make test` builds only the .debs).
test-install: all rpm
	tests/kernel/install/rpm-install.sh --rpms $(RPM_TOP)/RPMS --work $(BUILD)/rpm-install-test --dir $(BUILD)/kernel-guest
	tests/kernel/install/run-install-test.sh --full --work $(BUILD)/install-test --dir $(BUILD)/kernel-guest

# All of user space for arm64 (Debian's cross compilers and arm64 libraries,
# added to dpkg as a foreign architecture), its unit tests under qemu-aarch64
# and then all of them in an arm64 guest, and pfs.ko loaded in an arm64 guest:
# packaging/cross/arm64.sh.
# `make test` runs the protocol subset and the pfs.ko guest.
cross-arm64: deps
	packaging/cross/arm64.sh full $(BUILD)/arm64
	packaging/cross/arm64.sh deb $(BUILD)/arm64
	packaging/cross/arm64.sh kmod $(BUILD)/arm64

run: all
	@utils/pfs-local start

stop:
	@utils/pfs-local stop

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kmod clean
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/kernel/nvfs_mock clean
