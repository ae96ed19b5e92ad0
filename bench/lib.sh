# Shared helpers of the bench scripts (sourced, not run): they build,
# launch and sample. Every statistic and figure is computed by the xtask
# (`cargo xtask stats ...`, xtask/src/stats.rs), tested there.
# shellcheck shell=bash

ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
LATSCOPE=$TARGET_DIR/release/latscope
LATSCOPE_MUSL=$TARGET_DIR/x86_64-unknown-linux-musl/release/latscope
HOST=$TARGET_DIR/release/latscope-host
EVICT=$TARGET_DIR/release/evict
FORK_REPRO=$TARGET_DIR/release/fork_repro
STD_FLOOR=$TARGET_DIR/release/examples/std_floor
# The xtask: `cargo xtask bench NAME` sets XTASK to itself; run alone, a
# launcher builds it (release) with build_xtask.
XTASK_GIVEN=${XTASK:+1}
XTASK=${XTASK:-$TARGET_DIR/release/xtask}

log() { printf '# %s\n' "$*" >&2; }
die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# Install the Debian packages that provide the given commands, if missing.
# Usage: need_tools cmd:package ...
need_tools() {
	local missing=() t
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t##*:}")
	done
	((${#missing[@]} == 0)) && return 0
	[[ $(id -u) == 0 ]] || die "missing ${missing[*]}; install them (apt-get install ${missing[*]})"
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; } ||
		die "could not install ${missing[*]}"
}

build_release() {
	# BENCH_NO_BUILD=1: use the binaries already built (e.g. while others
	# keep changing the tree).
	if [[ ${BENCH_NO_BUILD:-0} == 1 && -x $LATSCOPE && -x $EVICT && -x $FORK_REPRO && -x $STD_FLOOR && -x $XTASK ]]; then
		log "BENCH_NO_BUILD=1: using the binaries in $TARGET_DIR/release"
		return 0
	fi
	log "building latscope, latscope-host and the test helpers (release)"
	(cd "$ROOT" && cargo build -q --release -p latscope -p latscope-host -p latscope-tests -p xtask --bins &&
		cargo build -q --release -p latscope --example std_floor) ||
		die "cargo build failed"
}

# The xtask, for its statistics and its tools (`xtask tool NAME`,
# xtask/src/tool/): the one `cargo xtask bench` runs, else a release build.
build_xtask() {
	if [[ -n $XTASK_GIVEN || ${BENCH_NO_BUILD:-0} == 1 ]] && [[ -x $XTASK ]]; then
		return 0
	fi
	(cd "$ROOT" && cargo build -q --release -p xtask) || die "cargo build of the xtask failed"
}

# A TCP port free on loopback now (the kernel's choice).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The target with the `proof` feature (the hidden options the proof scripts
# use, which what ships refuses), in a target directory of its own:
# LATSCOPE then names it.
build_proof() {
	log "building latscope with the proof options (release)"
	(cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR/proof cargo build -q --release -p latscope --features proof) ||
		die "cargo build of latscope --features proof failed"
	LATSCOPE=$TARGET_DIR/proof/release/latscope
}

build_musl() {
	rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl ||
		rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1 || return 1
	(cd "$ROOT" && cargo build -q --release -p latscope --target x86_64-unknown-linux-musl)
}

# The machine, for every results file.
machine_description() {
	echo "- \`uname -a\`: $(uname -a)"
	echo "- \`nproc\`: $(nproc)"
	echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "- memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); swap: $(awk '/SwapTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- cyclictest: $(dpkg-query -W -f '${Package} ${Version}' rt-tests 2>/dev/null || echo unknown)"
	echo "- latscope: $("$LATSCOPE" --version 2>/dev/null | head -1), commit $(git -C "$ROOT" rev-parse --short HEAD)"
}

# xtask ARGS...: run the xtask, built first when it is not there.
xtask() {
	[[ -x $XTASK ]] || (cd "$ROOT" && cargo build -q --release -p xtask) || die "cannot build the xtask"
	"$XTASK" "$@"
}

# Median of the numbers on stdin ("-" when there are none).
median() { xtask stats median; }

# ratio A B: A/B with two decimals, "-" if either is missing or B is 0.
ratio() { xtask stats ratio -- "$1" "$2"; }

# Sample a running process until it exits, every 0.1 s:
#   t_ms M vmlck_kB vmrss_kB locked_kB
#   t_ms T tid policy minflt majflt        (one line per thread)
# With MEM=1 also Locked from smaps_rollup (reading it takes the target's
# mm lock, so only in runs whose latency is not reported). Only bash
# builtins in the loop: no fork per sample.
sample_proc() {
	local pid=$1 mem=${2:-0} t0 now line rest f tid locked vmlck vmrss k v u sfd
	exec {sfd}<> <(:)
	t0=${EPOCHREALTIME/./}
	while [[ -d /proc/$pid ]]; do
		now=${EPOCHREALTIME/./}
		now=$(((now - t0) / 1000))
		vmlck=0 vmrss=0 locked=0
		{ while read -r k v u; do
			case $k in
			VmLck:) vmlck=$v ;;
			VmRSS:) vmrss=$v ;;
			esac
		done </proc/"$pid"/status; } 2>/dev/null || break
		if [[ $mem == 1 ]]; then
			{ while read -r k v u; do
				[[ $k == Locked: ]] && locked=$v
			done </proc/"$pid"/smaps_rollup; } 2>/dev/null || true
		fi
		echo "$now M $vmlck $vmrss $locked"
		for f in /proc/"$pid"/task/*/stat; do
			read -r line <"$f" 2>/dev/null || continue
			tid=${f%/stat}
			tid=${tid##*/}
			rest=${line##*) }
			# shellcheck disable=SC2206
			rest=($rest)
			# fields 3.. of stat: minflt is field 10, majflt 12, policy 41
			echo "$now T $tid ${rest[38]:-0} ${rest[7]:-0} ${rest[9]:-0}"
		done
		read -r -t 0.1 -u "$sfd" _ 2>/dev/null || true
	done
	exec {sfd}>&-
	return 0
}

# From a sample_proc log: "VMLCK VMRSS LOCKED MINOR MAJOR": peak VmLck,
# VmRSS and Locked (kB) after the first second, and the minor and major
# faults of the threads that were ever real-time (the measuring threads)
# from the first sample after 1 s to their last sample.
summarize_samples() { xtask stats samples "$1"; }

# Make the outputs under DIR free of this machine's paths: the target
# directory becomes `target/`, the checkout `.`.
scrub_paths() {
	local dir=$1
	# grep finds nothing (status 1) when there is nothing to scrub
	{ grep -rIl -e "$ROOT" -e "$TARGET_DIR" "$dir" 2>/dev/null || true; } | while read -r f; do
		sed -i -e "s#$TARGET_DIR/#target/#g" -e "s#$TARGET_DIR#target#g" -e "s#$ROOT/##g" -e "s#$ROOT#.#g" "$f"
	done
	return 0
}

# Paired statistics of a ratio A/B. Reads "A B" lines (one per pair, "-"
# for a missing value) and prints one line:
#   MEDIAN LO HI BELOW ABOVE N P RATIOS
# MEDIAN: the median of the per-pair ratios A/B; LO HI: its bootstrap 95 %
# interval (percentile method, 4000 resamples of the pairs, fixed seed so a
# table rebuilt from the same raw outputs is the same); BELOW/ABOVE: pairs
# whose ratio is below / above 1 (ties dropped); P: the two-sided sign test
# (exact binomial, p = 1/2) of BELOW against ABOVE; RATIOS: the per-pair
# ratios joined by commas. Pairs with a missing value or B = 0 are left
# out; with no pair left every field is "-".
pair_stats() { xtask stats pairs; }

# hist_summary FILE: "min avg p99 p99.9 max p50" (us) from a cyclictest-format
# histogram file, as both cyclictest and latscope write it with
# `-h H --histfile FILE` (xtask/src/histfile.rs). Every sample there is
# truncated to whole microseconds, so figures from two programs compare
# like for like. p50, p99, p99.9 and max: the worse thread; min: the
# better. avg: the mean of the threads' bucket means (overflows counted at
# the thread's max), not the "# Avg Latencies" line, which cyclictest
# truncates once more to an integer (about 0.5 us low on average).
hist_summary() { xtask stats hist "$1"; }

# locked CMD...: run a timing-sensitive command under the lock file named by
# $LATSCOPE_LOCK (flock), so that benchmarks sharing a machine take turns;
# without it, run CMD as it is.
locked() {
	if [[ -n ${LATSCOPE_LOCK:-} ]]; then
		flock "$LATSCOPE_LOCK" "$@"
	else
		"$@"
	fi
}
