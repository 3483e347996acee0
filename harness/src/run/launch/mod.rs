//! Launch stage: one wrapper through which every kernel launch goes.
//! Part of `run/`: may import `errors`, `proc/`, `source/`, `build/` and the rest of `run/`.
//!
//! A [`Gpu`] holds the context and stream; [`Gpu::run`] uploads a [`Problem`]'s buffers,
//! poisons outputs (and, on request, shared memory), runs its launch steps and reads every
//! buffer back. Nothing here checks results: that is the oracle's job.

use std::sync::Arc;

use cudarc::driver::{
    result, sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::run::compare::DeviceCompare;
use crate::run::poison::{poison_bytes, FIXED_POISON};
use crate::run::schedule::{Plan, MODE_PCT};

use crate::errors::{Error, Result};
use crate::source::exercises::{Arg, Bits, Init, LaunchStep, Problem};

/// The device, its stream, and what the shared-memory poisoner needs to know.
pub struct Gpu {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) sm_count: u32,
    pub(super) smem_optin: u32,
}

/// A loaded module.
pub struct Module {
    pub(super) module: Arc<CudaModule>,
    /// Name expressions of C++ kernels -> their lowered names (from the PTX).
    pub(super) names: std::collections::BTreeMap<String, String>,
}

/// A problem's buffers kept on the device (see [`Gpu::upload`]).
pub struct Resident {
    pub(super) bufs: Vec<CudaSlice<u8>>,
    /// Inputs and in-out buffers: their data as generated, restored before every trial.
    pub(super) pristine: Vec<Option<CudaSlice<u8>>>,
    /// Outputs and in-out buffers: the expected bytes.
    pub(super) expected: Vec<Option<CudaSlice<u8>>>,
    /// One counter per buffer, then one for the barrier instances the jitter prelude counted.
    pub(super) counts: CudaSlice<u32>,
    /// Barriers warp 0 of block 0 went through in the last pct-jittered trial (0: not counted).
    pub instances: u32,
    /// How each buffer is compared on the device.
    pub(super) compares: Vec<DeviceCompare>,
    /// Per buffer, the hash sum of an unordered output (`racegate_hash_elems`) and its
    /// expected value.
    pub(super) sums: CudaSlice<u64>,
    pub(super) expected_sums: CudaSlice<u64>,
}

/// Per-run switches.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Seed for the jitter prelude; ignored by modules built without jitter. Without a
    /// [`Plan`] of its own, a launch with a seed gets the dense jitter ([`Plan::dense`]).
    pub jitter_seed: Option<u64>,
    /// Fill every SM's shared memory with [`RunOptions::poison`] before the problem's launches.
    pub poison_shared: bool,
    /// Fill outputs with [`RunOptions::poison`] before the launch (0xFF bytes for an output
    /// that may stay partly unwritten by design: the oracle knows that poison). Off under
    /// sanitizers: the fill is a write, and initcheck must see an output that nobody
    /// initialized as uninitialized.
    pub poison_outputs: bool,
    /// The 32-bit word the poison repeats. It changes from trial to trial
    /// ([`crate::run::poison::poison`]), so a read of memory nobody wrote changes the result
    /// instead of reading the same garbage every run.
    pub poison: u32,
}

/// What an output starts as before a launch, `None` for left uninitialized (a sanitizer run:
/// initcheck must see an output nobody wrote as uninitialized). An output that may stay partly
/// unwritten by design, or that only a prefix of counts (a stream compaction's free tail), is
/// filled with [`FIXED_POISON`] even then, so initcheck does not report copying back the bytes
/// nobody had to write; every other output gets the run's poison when outputs are poisoned.
pub fn output_fill(b: &crate::source::exercises::Buffer, opts: &RunOptions) -> Option<u32> {
    if b.may_stay_unwritten || (!opts.poison_outputs && b.compare.prefix.is_some()) {
        Some(FIXED_POISON)
    } else {
        opts.poison_outputs.then_some(opts.poison)
    }
}

impl Gpu {
    /// Opens device 0.
    pub fn open() -> Result<Gpu> {
        if let Err(why) = crate::run::device::probe() {
            return Err(Error::NoDevice(why));
        }
        let ctx = CudaContext::new(0).map_err(|e| Error::cuda("creating the context", e))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| Error::cuda("reading device attributes", e))
        };
        // Counts, never negative; a negative one would read as none.
        let count = |v: i32| u32::try_from(v).unwrap_or(0);
        let sm_count = count(attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )?);
        let smem_optin = count(attr(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?);
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            sm_count,
            smem_optin,
        })
    }

    /// The stream every launch goes to (`run/perf.rs` records its timing events on it).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Loads PTX text (module load is where the driver JIT-compiles it).
    pub fn load(&self, ptx: &str) -> Result<Module> {
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| Error::cuda("loading the module", e))?;
        Ok(Module {
            module,
            names: crate::build::ptx::names(ptx),
        })
    }

    /// Looks up a kernel by its `extern "C"` name, or by the name expression a C++ kernel was
    /// compiled with (`reduce<float, 256>`).
    pub fn function(&self, module: &Module, name: &str) -> Result<CudaFunction> {
        let symbol = module.names.get(name).map_or(name, String::as_str);
        module
            .module
            .load_function(symbol)
            .map_err(|e| Error::cuda(format!("looking up kernel `{name}`"), e))
    }

    /// Uploads, launches every step, waits, and reads every buffer back (inputs included, so
    /// the caller can check they are unchanged).
    pub fn run(
        &self,
        module: &Module,
        problem: &Problem,
        opts: RunOptions,
    ) -> Result<Vec<Vec<u8>>> {
        self.run_keeping(module, problem, opts, &mut Vec::new())
    }

    /// [`Gpu::run`], its device buffers moved into `kept` instead of freed: a sanitizer target
    /// that runs several cases keeps every earlier case's memory allocated, so no later case
    /// gets back memory an earlier one wrote (initcheck must see a later case's unwritten
    /// output as unwritten, whatever the allocator reuses).
    pub fn run_keeping(
        &self,
        module: &Module,
        problem: &Problem,
        opts: RunOptions,
        kept: &mut Vec<CudaSlice<u8>>,
    ) -> Result<Vec<Vec<u8>>> {
        // The buffers go into `kept` as they are made, before anything can fail: memory the
        // fill wrote is never freed early for a later case to get back.
        let first = kept.len();
        for b in &problem.buffers {
            let slice = match &b.init {
                Init::Data(d) => self.stream.clone_htod(d),
                // An output the kernel may leave partly unwritten by design is filled even for a
                // sanitizer run, so initcheck does not report copying back bytes nobody wrote.
                Init::Poison(n) if output_fill(b, &opts).is_some() => {
                    let fill = output_fill(b, &opts).expect("just checked");
                    self.stream.clone_htod(&poison_bytes(fill, *n))
                }
                // SAFETY: left uninitialized on purpose (see `poison_outputs`); u8 has no
                // invalid bit patterns and the bytes are only read back, never interpreted.
                Init::Poison(n) => unsafe { self.stream.alloc::<u8>(*n) },
                Init::Zero(n) => self.stream.alloc_zeros::<u8>(*n),
            }
            .map_err(|e| Error::cuda(format!("uploading `{}`", b.name), e))?;
            kept.push(slice);
        }
        let bufs = &kept[first..];
        self.launch_problem(module, problem, bufs, opts, None)?;
        self.stream
            .synchronize()
            .map_err(|e| Error::cuda("running the kernel", e))?;
        bufs.iter()
            .zip(&problem.buffers)
            .map(|(d, b)| {
                self.stream
                    .clone_dtoh(d)
                    .map_err(|e| Error::cuda(format!("reading back `{}`", b.name), e))
            })
            .collect()
    }

    /// Writes the jitter plan (`plan`, else the dense jitter under the seed, else nothing),
    /// poisons shared memory if asked, and launches the problem's steps.
    pub(super) fn launch_problem(
        &self,
        module: &Module,
        problem: &Problem,
        bufs: &[CudaSlice<u8>],
        opts: RunOptions,
        plan: Option<&Plan>,
    ) -> Result<()> {
        match (plan, opts.jitter_seed) {
            (Some(p), _) => self.set_jitter_plan(module, p)?,
            (None, Some(seed)) => self.set_jitter_plan(module, &Plan::dense(seed))?,
            (None, None) => {}
        }
        if opts.poison_shared {
            self.poison_shared(module, opts.poison)?;
        }
        for step in &problem.launches {
            let func = self.function(module, &step.kernel)?;
            // SAFETY: the exercise family states the kernel's signature and sizes each buffer
            // for the geometry it draws; a kernel that still writes out of bounds faults on the
            // device (reported as a Fault verdict), it cannot corrupt host memory.
            unsafe { self.launch(&func, step, bufs, step.shared) }?;
        }
        Ok(())
    }

    /// Launches one step.
    ///
    /// # Safety
    /// What cannot be checked here: that the kernel's parameter list matches `step.args` in
    /// number and type, and that it stays inside the buffers it is given.
    pub unsafe fn launch(
        &self,
        func: &CudaFunction,
        step: &LaunchStep,
        bufs: &[CudaSlice<u8>],
        smem: u32,
    ) -> Result<()> {
        // The scalars' bits, kept alive for the builder that borrows them.
        let scalars: Vec<Bits> = step
            .args
            .iter()
            .map(|a| match a {
                Arg::Int(v) => Bits::B32(v.cast_unsigned()),
                Arg::Scalar(b) => *b,
                Arg::Buf(_) => Bits::B8(0),
            })
            .collect();
        let mut builder = self.stream.launch_builder(func);
        for (a, bits) in step.args.iter().zip(&scalars) {
            match (a, bits) {
                (Arg::Buf(i), _) => builder.arg(&bufs[*i]),
                (_, Bits::B8(v)) => builder.arg(v),
                (_, Bits::B16(v)) => builder.arg(v),
                (_, Bits::B32(v)) => builder.arg(v),
                (_, Bits::B64(v)) => builder.arg(v),
            };
        }
        if smem > 48 * 1024 {
            let bytes = i32::try_from(smem).map_err(|_| {
                Error::Usage(format!(
                    "{smem} bytes of shared memory: more than a launch takes"
                ))
            })?;
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes,
            )
            .map_err(|e| Error::cuda(format!("allowing {smem} bytes of shared memory"), e))?;
        }
        let cfg = LaunchConfig {
            grid_dim: (step.grid.0, step.grid.1, step.grid.2),
            block_dim: (step.block.0, step.block.1, step.block.2),
            shared_mem_bytes: smem,
        };
        // SAFETY: forwarded to the caller.
        unsafe { builder.launch(cfg) }
            .map(|_| ())
            .map_err(|e| Error::cuda(format!("launching `{}`", step.kernel), e))
    }

    /// Restores every buffer that has a pristine copy (inputs and in-out buffers), on the device.
    pub(super) fn restore_all(&self, res: &mut Resident) -> Result<()> {
        for (d, p) in res.bufs.iter_mut().zip(&res.pristine) {
            if let Some(p) = p {
                if d.len() == p.len() {
                    self.stream
                        .memcpy_dtod(p, d)
                        .map_err(|e| Error::cuda("restoring an input", e))?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn poison_shared(&self, module: &Module, pattern: u32) -> Result<()> {
        let func = self.function(module, "racegate_poison_shared")?;
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            // bounded: read from an i32 device attribute.
            i32::try_from(self.smem_optin).unwrap_or(i32::MAX),
        )
        .map_err(|e| Error::cuda("sizing the shared-memory poisoner", e))?;
        let step = LaunchStep {
            shared: 0,
            kernel: "racegate_poison_shared".into(),
            grid: crate::source::exercises::Dim3(self.sm_count, 1, 1),
            block: crate::source::exercises::Dim3(1024, 1, 1),
            args: vec![
                Arg::int(self.smem_optin / 4),
                // The kernel takes it as unsigned: the same bits.
                Arg::Int(pattern.cast_signed()),
            ],
        };
        // SAFETY: the poisoner takes two unsigned ints and writes only its dynamic shared memory.
        unsafe { self.launch(&func, &step, &[], self.smem_optin) }
    }

    /// Uploads a problem once: its buffers, a pristine copy of each input and the expected
    /// bytes of each output, all kept on the device for the trials that reuse this input set.
    /// Outputs are compared exactly, as their [`crate::source::exercises::Compare`] says.
    pub fn upload(&self, problem: &Problem) -> Result<Resident> {
        self.upload_with(problem, 0.0)
    }

    /// [`Gpu::upload`] with the judge's kernel-wide tolerance for float outputs that declare
    /// none: every compare, that tolerance included, then runs on the device
    /// ([`crate::run::compare`]).
    pub fn upload_with(&self, problem: &Problem, tolerance: f64) -> Result<Resident> {
        let up = |bytes: &[u8], what: &str| {
            self.stream
                .clone_htod(bytes)
                .map_err(|e| Error::cuda(format!("uploading `{what}`"), e))
        };
        let mut bufs = Vec::new();
        let mut pristine = Vec::new();
        let mut expected = Vec::new();
        for b in &problem.buffers {
            match &b.init {
                // An input, or an in-out buffer (a histogram accumulating into zeroed bins, an
                // in-place sort): its data goes up, and a pristine copy restores it per trial.
                Init::Data(d) => {
                    bufs.push(up(d, &b.name)?);
                    pristine.push(Some(up(d, &b.name)?));
                }
                Init::Poison(n) | Init::Zero(n) => {
                    // SAFETY: every trial resets outputs before its launch.
                    bufs.push(
                        unsafe { self.stream.alloc::<u8>((*n).max(1)) }
                            .map_err(|e| Error::cuda(format!("allocating `{}`", b.name), e))?,
                    );
                    pristine.push(None);
                }
            }
            expected.push(match &b.expected {
                Some(e) => Some(up(e, &b.name)?),
                None => None,
            });
        }
        let n = problem.buffers.len();
        let counts = self
            .stream
            .alloc_zeros::<u32>(n + 1)
            .map_err(|e| Error::cuda("allocating counters", e))?;
        let compares = crate::run::compare::plan(&problem.buffers, &problem.sizes, tolerance);
        let want: Vec<u64> = compares
            .iter()
            .map(|c| match c {
                DeviceCompare::Unordered { expected, .. } => *expected,
                _ => 0,
            })
            .collect();
        let expected_sums = self
            .stream
            .clone_htod(&want)
            .map_err(|e| Error::cuda("uploading hash sums", e))?;
        let sums = self
            .stream
            .alloc_zeros::<u64>(n.max(1))
            .map_err(|e| Error::cuda("allocating hash sums", e))?;
        Ok(Resident {
            bufs,
            pristine,
            expected,
            counts,
            instances: 0,
            compares,
            sums,
            expected_sums,
        })
    }

    /// Resets every buffer for a trial: in-out buffers from their pristine copy (device to
    /// device), outputs to their poison (or zero where the contract says the host clears them).
    pub(super) fn reset(
        &self,
        problem: &Problem,
        res: &mut Resident,
        opts: RunOptions,
    ) -> Result<()> {
        for ((b, d), p) in problem.buffers.iter().zip(&mut res.bufs).zip(&res.pristine) {
            let fill = match (&b.init, p) {
                // An in-out buffer starts every trial from its generated data; a pure input
                // is restored only after a trial that changed it (`read_back`).
                (Init::Data(_), Some(p)) if b.expected.is_some() || b.judge_fills => {
                    self.stream
                        .memcpy_dtod(p, d)
                        .map_err(|e| Error::cuda(format!("restoring `{}`", b.name), e))?;
                    continue;
                }
                (Init::Data(_), _) => continue,
                (Init::Poison(_), _) if b.may_stay_unwritten => FIXED_POISON,
                (Init::Poison(_), _) => opts.poison,
                (Init::Zero(_), _) => 0,
            };
            let (ptr, _sync) = d.device_ptr(&self.stream);
            let (words, tail) = (d.len() / 4, d.len() % 4);
            // SAFETY: `ptr` is a live allocation of `d.len()` bytes on this stream: `words`
            // 32-bit words from `ptr`, then the `tail` bytes after them (buffers start aligned).
            let s = self.stream.cu_stream();
            (|| unsafe {
                sys::cuMemsetD32Async(ptr, fill, words, s).result()?;
                if tail > 0 {
                    // The tail gets the pattern's low byte (as `fill as u8` did).
                    let low = fill.to_le_bytes()[0];
                    result::memset_d8_async(ptr + (4 * words) as u64, low, tail, s)?;
                }
                Ok::<(), cudarc::driver::DriverError>(())
            })()
            .map_err(|e| Error::cuda(format!("resetting `{}`", b.name), e))?;
        }
        Ok(())
    }

    /// One trial on resident buffers: reset the outputs (0xFF poison, or zero where the
    /// contract says the host clears them; in-out buffers from their pristine copy, device to
    /// device), poison shared memory, launch every step under `plan` (`None`: the dense jitter
    /// under `opts.jitter_seed`, if any), then compare every buffer with its reference on the
    /// device. Returns the count of differences per buffer; all zero means the trial passed. Every compare runs on the device as
    /// [`crate::run::compare`] decided at upload; only one counter per buffer (and the barrier
    /// count of a pct plan, kept in [`Resident::instances`]) comes back. A nonzero counter
    /// means "differs, or the device cannot tell": the caller reads the data back.
    pub fn run_planned(
        &self,
        module: &Module,
        problem: &Problem,
        res: &mut Resident,
        opts: RunOptions,
        plan: Option<&Plan>,
    ) -> Result<Vec<u32>> {
        self.reset(problem, res, opts)?;
        self.stream
            .memset_zeros(&mut res.counts)
            .map_err(|e| Error::cuda("clearing counters", e))?;
        // Block 0's barrier count, once per input set (it depends on the problem only).
        let counting = plan.is_some_and(|p| p.mode == MODE_PCT) && res.instances == 0;
        if counting {
            self.clear_instances(module)?;
        }
        self.launch_problem(module, problem, &res.bufs, opts, plan)?;
        let n = problem.buffers.len();
        if counting {
            self.copy_instances(module, &mut res.counts, n)?;
        }
        if res
            .compares
            .iter()
            .any(|c| matches!(c, DeviceCompare::Unordered { .. }))
        {
            self.stream
                .memset_zeros(&mut res.sums)
                .map_err(|e| Error::cuda("clearing hash sums", e))?;
        }
        // bounded: at most 8 x the SM count, a u32.
        let blocks = |n: u64| {
            let blocks = n.div_ceil(16 * 256).clamp(1, 8 * u64::from(self.sm_count));
            u32::try_from(blocks).unwrap_or(u32::MAX)
        };
        let cfg = |n: u64| LaunchConfig {
            grid_dim: (blocks(n), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        for i in 0..n {
            let d = &res.bufs[i];
            // Outputs against their expected bytes, inputs against their pristine copy.
            let Some(r) = res.expected[i].as_ref().or(res.pristine[i].as_ref()) else {
                continue;
            };
            if r.len() != d.len() {
                // A reference of another length than the buffer: the host says how.
                self.stream
                    .memcpy_htod(&[1u32], &mut res.counts.slice_mut(i..i + 1))
                    .map_err(|e| Error::cuda("flagging a length", e))?;
                continue;
            }
            let counter = res.counts.slice(i..i + 1);
            match res
                .compares
                .get(i)
                .cloned()
                .unwrap_or(DeviceCompare::Bytes {
                    bytes: d.len() as u64,
                }) {
                DeviceCompare::Skip => {}
                DeviceCompare::Bytes { bytes } => {
                    let bytes = bytes.min(d.len() as u64);
                    let f = self.function(module, "racegate_diff")?;
                    let mut b = self.stream.launch_builder(&f);
                    b.arg(d).arg(r).arg(&bytes).arg(&counter);
                    // SAFETY: racegate_diff reads `bytes` bytes of two buffers of at least that
                    // many bytes and adds to one counter.
                    unsafe { b.launch(cfg(bytes)) }
                        .map_err(|e| Error::cuda("comparing on the device", e))?;
                }
                DeviceCompare::Elems {
                    n: elems,
                    size,
                    kind,
                    unwritten,
                    abs,
                    rel,
                    ulp,
                } => {
                    let elems = elems.min((d.len() / size.max(1) as usize) as u64);
                    let f = self.function(module, "racegate_diff_elems")?;
                    let unwritten = unwritten as u32;
                    let mut b = self.stream.launch_builder(&f);
                    b.arg(d)
                        .arg(r)
                        .arg(&elems)
                        .arg(&size)
                        .arg(&kind)
                        .arg(&unwritten);
                    b.arg(&abs).arg(&rel).arg(&ulp).arg(&counter);
                    // SAFETY: reads `elems` elements of `size` bytes of two buffers at least
                    // that long (just clamped) and adds to one counter.
                    unsafe { b.launch(cfg(elems)) }
                        .map_err(|e| Error::cuda("comparing on the device", e))?;
                }
                DeviceCompare::Unordered { n: elems, size, .. } => {
                    let elems = elems.min((d.len() / size.max(1) as usize) as u64);
                    let f = self.function(module, "racegate_hash_elems")?;
                    let sum = res.sums.slice(i..i + 1);
                    let mut b = self.stream.launch_builder(&f);
                    b.arg(d).arg(&elems).arg(&size).arg(&sum);
                    // SAFETY: reads `elems` elements of `size` bytes of one buffer that long and
                    // adds to one 64-bit sum.
                    unsafe { b.launch(cfg(elems)) }
                        .map_err(|e| Error::cuda("hashing on the device", e))?;
                    // The sum against the expected sum, as 8 bytes.
                    let want = res.expected_sums.slice(i..i + 1);
                    let f = self.function(module, "racegate_diff")?;
                    let eight = 8u64;
                    let mut b = self.stream.launch_builder(&f);
                    b.arg(&sum).arg(&want).arg(&eight).arg(&counter);
                    // SAFETY: racegate_diff reads 8 bytes of two 8-byte slots.
                    unsafe { b.launch(cfg(8)) }
                        .map_err(|e| Error::cuda("comparing on the device", e))?;
                }
            }
        }
        let mut counts = self
            .stream
            .clone_dtoh(&res.counts)
            .map_err(|e| Error::cuda("running the kernel", e))?;
        if counting {
            res.instances = counts[n];
        }
        counts.truncate(n);
        Ok(counts)
    }
}

#[cfg(test)]
mod tests;
