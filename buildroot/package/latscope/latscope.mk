################################################################################
#
# latscope
#
################################################################################

# The release source archive of the target program (core and shim-linux
# with a lock file of their own), written by scripts/source-archive. It is
# taken from BR2_PACKAGE_LATSCOPE_SITE, or else from the target/dist
# directory of the latscope tree that holds this BR2_EXTERNAL tree.
# It comes with its crates vendored (VENDOR/), which Buildroot's download
# step keeps as they are: the build runs offline, and latscope.hash holds
# for every supported Buildroot, whatever its cargo and tar.
LATSCOPE_VERSION = 0.2.0
LATSCOPE_SOURCE = latscope-target-src-$(LATSCOPE_VERSION).tar.gz
LATSCOPE_SITE = $(call qstrip,$(BR2_PACKAGE_LATSCOPE_SITE))
ifeq ($(LATSCOPE_SITE),)
LATSCOPE_SITE = $(BR2_EXTERNAL_LATSCOPE_PATH)/../target/dist
LATSCOPE_SITE_METHOD = file
endif
LATSCOPE_LICENSE = Apache-2.0 or MIT
LATSCOPE_LICENSE_FILES = LICENSE-APACHE LICENSE-MIT

# Only the target program.
LATSCOPE_SUBDIR = shim-linux
LATSCOPE_CARGO_BUILD_OPTS = --bin latscope
LATSCOPE_CARGO_INSTALL_OPTS = --bin latscope

# The project's release profile (Cargo.toml's [profile.release]), which
# pkg-cargo.mk's profile settings would replace: this comes after them.
# A static executable: the toolchain's sysroot must have libc.a. On ARM,
# keep Buildroot's own linker workaround, which these RUSTFLAGS replace.
LATSCOPE_RUSTFLAGS = -C target-feature=+crt-static
ifeq ($(NORMALIZED_ARCH),arm)
LATSCOPE_RUSTFLAGS += -Clink-arg=-Wl,--allow-multiple-definition
endif
LATSCOPE_CARGO_ENV = \
	CARGO_PROFILE_RELEASE_OPT_LEVEL="s" \
	CARGO_PROFILE_RELEASE_LTO="true" \
	CARGO_PROFILE_RELEASE_CODEGEN_UNITS="1" \
	CARGO_TARGET_$(call UPPERCASE,$(RUSTC_TARGET_NAME))_RUSTFLAGS="$(LATSCOPE_RUSTFLAGS)"

# A development checkout (LATSCOPE_OVERRIDE_SRCDIR in local.mk) is copied,
# not downloaded: the whole workspace (cargo reads every member's manifest)
# without what no build reads. Buildroot vendors nothing then, so fetch the
# workspace's locked crates into Buildroot's cargo home first. This needs
# the crate registry once; later builds find the crates there.
ifneq ($(LATSCOPE_OVERRIDE_SRCDIR),)
LATSCOPE_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS = \
	--exclude /target --exclude /.cargo --exclude /.ci --exclude /buildroot \
	--exclude /bench --exclude /deploy --exclude /docs --exclude /scripts \
	--exclude /fuzz/corpus --exclude /fuzz/regressions \
	--exclude /tests/golden --exclude /tests/tests

define LATSCOPE_CARGO_FETCH
	cd $(@D) && \
		$(TARGET_MAKE_ENV) $(PKG_COMMON_CARGO_ENV) \
		cargo fetch --locked --target $(RUSTC_TARGET_NAME)
endef
LATSCOPE_PRE_CONFIGURE_HOOKS += LATSCOPE_CARGO_FETCH
endif

# Started at boot (BR2_PACKAGE_LATSCOPE_START_AT_BOOT): the init script
# and its arguments.
ifeq ($(BR2_PACKAGE_LATSCOPE_START_AT_BOOT),y)
define LATSCOPE_INSTALL_INIT_SYSV
	$(INSTALL) -D -m 755 $(LATSCOPE_PKGDIR)/S95latscope \
		$(TARGET_DIR)/etc/init.d/S95latscope
	mkdir -p $(TARGET_DIR)/etc/default
	printf 'LATSCOPE_ARGS="%s"\n' '$(call qstrip,$(BR2_PACKAGE_LATSCOPE_ARGS))' \
		>$(TARGET_DIR)/etc/default/latscope
endef
endif

$(eval $(cargo-package))
