################################################################################
#
# latscope
#
################################################################################

# Built from the latscope source tree that contains this BR2_EXTERNAL tree.
# To build another checkout, set LATSCOPE_OVERRIDE_SRCDIR in local.mk.
LATSCOPE_VERSION = 0.2.0
LATSCOPE_SITE = $(BR2_EXTERNAL_LATSCOPE_PATH)/..
LATSCOPE_SITE_METHOD = local
LATSCOPE_LICENSE = Apache-2.0 or MIT
LATSCOPE_LICENSE_FILES = LICENSE-APACHE LICENSE-MIT

# The workspace's cargo configuration is for cross-building without
# Buildroot; Buildroot's cargo environment sets linker and flags itself.
LATSCOPE_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS = \
	--exclude /target --exclude /.cargo --exclude /buildroot

# Only the target program: the shim-linux crate of the workspace.
LATSCOPE_SUBDIR = shim-linux
LATSCOPE_CARGO_BUILD_OPTS = --bin latscope

# A local source tree is not vendored at download time, so fetch the
# locked dependencies into Buildroot's cargo home before the offline build.
# This runs before configuring, when host-rustc's cargo is available.
define LATSCOPE_CARGO_FETCH
	cd $(@D)/$(LATSCOPE_SUBDIR) && \
		$(TARGET_MAKE_ENV) $(PKG_COMMON_CARGO_ENV) \
		cargo fetch --locked --manifest-path Cargo.toml
endef
LATSCOPE_PRE_CONFIGURE_HOOKS += LATSCOPE_CARGO_FETCH

$(eval $(cargo-package))
