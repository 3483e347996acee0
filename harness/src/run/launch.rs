//! Launch stage: one wrapper through which every kernel launch goes.
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

use crate::run::poison::{poison_bytes, FIXED_POISON};

use crate::errors::{Error, Result};
use crate::source::exercises::{Arg, Bits, Init, LaunchStep, Problem};

/// The device, its stream, and what the shared-memory poisoner needs to know.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    sm_count: u32,
    smem_optin: u32,
}

/// A loaded module.
pub struct Module {
    module: Arc<CudaModule>,
    /// Name expressions of C++ kernels -> their lowered names (from the PTX).
    names: std::collections::BTreeMap<String, String>,
}

/// A problem's buffers kept on the device (see [`Gpu::upload`]).
pub struct Resident {
    bufs: Vec<CudaSlice<u8>>,
    /// Inputs and in-out buffers: their data as generated, restored before every trial.
    pristine: Vec<Option<CudaSlice<u8>>>,
    /// Outputs and in-out buffers: the expected bytes.
    expected: Vec<Option<CudaSlice<u8>>>,
    counts: CudaSlice<u32>,
}

/// Per-run switches.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Seed for the jitter prelude; ignored by modules built without jitter.
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
        let sm_count =
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let smem_optin =
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as u32;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            sm_count,
            smem_optin,
        })
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
        let mut bufs: Vec<CudaSlice<u8>> = Vec::with_capacity(problem.buffers.len());
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
            bufs.push(slice);
        }
        self.launch_problem(module, problem, &bufs, opts)?;
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

    /// Sets the jitter seed, poisons shared memory if asked, and launches the problem's steps.
    fn launch_problem(
        &self,
        module: &Module,
        problem: &Problem,
        bufs: &[CudaSlice<u8>],
        opts: RunOptions,
    ) -> Result<()> {
        if let Some(seed) = opts.jitter_seed {
            self.set_jitter_seed(module, seed)?;
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
                Arg::Int(v) => Bits::B32(*v as u32),
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
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
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

    fn set_jitter_seed(&self, module: &Module, seed: u64) -> Result<()> {
        let Ok(mut global) = module
            .module
            .get_global("racegate_jitter_seed", &self.stream)
        else {
            return Ok(()); // built without jitter
        };
        self.stream
            .memcpy_htod(&seed.to_le_bytes(), &mut global)
            .map_err(|e| Error::cuda("setting the jitter seed", e))
    }

    fn poison_shared(&self, module: &Module, pattern: u32) -> Result<()> {
        let func = self.function(module, "racegate_poison_shared")?;
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            self.smem_optin as i32,
        )
        .map_err(|e| Error::cuda("sizing the shared-memory poisoner", e))?;
        let step = LaunchStep {
            shared: 0,
            kernel: "racegate_poison_shared".into(),
            grid: crate::source::exercises::Dim3(self.sm_count, 1, 1),
            block: crate::source::exercises::Dim3(1024, 1, 1),
            args: vec![
                Arg::Int((self.smem_optin / 4) as i32),
                Arg::Int(pattern as i32),
            ],
        };
        // SAFETY: the poisoner takes two unsigned ints and writes only its dynamic shared memory.
        unsafe { self.launch(&func, &step, &[], self.smem_optin) }
    }

    /// Uploads a problem once: its buffers, a pristine copy of each input and the expected
    /// bytes of each output, all kept on the device for the trials that reuse this input set.
    pub fn upload(&self, problem: &Problem) -> Result<Resident> {
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
        let counts = self
            .stream
            .alloc_zeros::<u32>(problem.buffers.len())
            .map_err(|e| Error::cuda("allocating counters", e))?;
        Ok(Resident {
            bufs,
            pristine,
            expected,
            counts,
        })
    }

    /// One trial on resident buffers: reset the outputs (0xFF poison, or zero where the
    /// contract says the host clears them), poison shared memory, launch every step, then
    /// compare every buffer with its reference on the device. Returns the number of differing
    /// bytes per buffer; all zero means the trial passed.
    pub fn run_resident(
        &self,
        module: &Module,
        problem: &Problem,
        res: &mut Resident,
        opts: RunOptions,
    ) -> Result<Vec<u32>> {
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
                    result::memset_d8_async(ptr + (4 * words) as u64, fill as u8, tail, s)?;
                }
                Ok::<(), cudarc::driver::DriverError>(())
            })()
            .map_err(|e| Error::cuda(format!("resetting `{}`", b.name), e))?;
        }
        self.stream
            .memset_zeros(&mut res.counts)
            .map_err(|e| Error::cuda("clearing counters", e))?;
        self.launch_problem(module, problem, &res.bufs, opts)?;
        let diff = self.function(module, "racegate_diff")?;
        for (i, ((d, e), p)) in res
            .bufs
            .iter()
            .zip(&res.expected)
            .zip(&res.pristine)
            .enumerate()
        {
            // Outputs against their expected bytes, inputs against their pristine copy.
            let Some(r) = e.as_ref().or(p.as_ref()) else {
                continue;
            };
            let n = d.len() as u64;
            let blocks = n.div_ceil(4 * 256).clamp(1, 4 * self.sm_count as u64) as u32;
            let counter = res.counts.slice(i..i + 1);
            let mut b = self.stream.launch_builder(&diff);
            b.arg(d).arg(r).arg(&n).arg(&counter);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: racegate_diff reads n bytes of two buffers of at least n bytes and adds to
            // one counter.
            unsafe { b.launch(cfg) }.map_err(|e| Error::cuda("comparing on the device", e))?;
        }
        self.stream
            .clone_dtoh(&res.counts)
            .map_err(|e| Error::cuda("running the kernel", e))
    }

    /// Reads every resident buffer back (after a failed trial, for the report), and restores
    /// inputs the kernel modified so the next trial of this input set starts clean.
    pub fn read_back(&self, res: &mut Resident) -> Result<Vec<Vec<u8>>> {
        let out: Vec<Vec<u8>> = res
            .bufs
            .iter()
            .map(|d| {
                self.stream
                    .clone_dtoh(d)
                    .map_err(|e| Error::cuda("reading back", e))
            })
            .collect::<Result<_>>()?;
        for ((d, p), e) in res.bufs.iter_mut().zip(&res.pristine).zip(&res.expected) {
            if let (Some(r), None) = (p, e) {
                if d.len() == r.len() {
                    self.stream
                        .memcpy_dtod(r, d)
                        .map_err(|e| Error::cuda("restoring an input", e))?;
                }
            }
        }
        Ok(out)
    }

    /// Reads back racegate's own device copies (pristine inputs, expected outputs). A kernel
    /// that writes outside its buffers can land in them; the caller compares with its host
    /// copies to tell that apart from a racegate bug.
    pub fn read_references(&self, res: &Resident) -> Result<Vec<Option<Vec<u8>>>> {
        res.expected
            .iter()
            .zip(&res.pristine)
            .map(|(e, p)| match e.as_ref().or(p.as_ref()) {
                Some(r) => self
                    .stream
                    .clone_dtoh(r)
                    .map(Some)
                    .map_err(|e| Error::cuda("reading back a reference", e)),
                None => Ok(None),
            })
            .collect()
    }

    /// A bare launch loop for the benchmark: the problem's steps `iters` times, no checks.
    pub fn bare_loop(
        &self,
        module: &Module,
        problem: &Problem,
        iters: u32,
    ) -> Result<std::time::Duration> {
        let bufs: Vec<CudaSlice<u8>> = problem
            .buffers
            .iter()
            .map(|b| match &b.init {
                Init::Data(d) => self.stream.clone_htod(d),
                Init::Poison(n) | Init::Zero(n) => self.stream.alloc_zeros::<u8>(*n),
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::cuda("uploading", e))?;
        let funcs: Vec<CudaFunction> = problem
            .launches
            .iter()
            .map(|s| self.function(module, &s.kernel))
            .collect::<Result<_>>()?;
        self.stream
            .synchronize()
            .map_err(|e| Error::cuda("sync", e))?;
        let start = std::time::Instant::now();
        for _ in 0..iters {
            for (f, s) in funcs.iter().zip(&problem.launches) {
                // SAFETY: as in `run`.
                unsafe { self.launch(f, s, &bufs, s.shared) }?;
            }
            self.stream
                .synchronize()
                .map_err(|e| Error::cuda("running", e))?;
        }
        Ok(start.elapsed())
    }
}

#[cfg(test)]
mod fill_tests {
    use super::*;
    use crate::source::exercises::{Buffer, Elem, Init};

    fn out(prefix: Option<&str>, unwritten: bool) -> Buffer {
        let mut b = Buffer::input("o", Elem::U32, vec![]);
        b.init = Init::Poison(16);
        b.may_stay_unwritten = unwritten;
        b.compare.prefix = prefix.map(String::from);
        b
    }

    #[test]
    fn a_prefix_output_is_filled_for_sanitizer_runs_like_an_unwritten_one() {
        let sanitizer = RunOptions::default();
        let stress = RunOptions {
            poison_outputs: true,
            poison: 0,
            ..RunOptions::default()
        };
        assert_eq!(output_fill(&out(None, false), &sanitizer), None);
        assert_eq!(
            output_fill(&out(Some("count[0]"), false), &sanitizer),
            Some(FIXED_POISON)
        );
        assert_eq!(
            output_fill(&out(None, true), &sanitizer),
            Some(FIXED_POISON)
        );
        // Stress: the rotating poison, but the fixed one where the oracle expects it.
        assert_eq!(output_fill(&out(Some("count[0]"), false), &stress), Some(0));
        assert_eq!(output_fill(&out(None, false), &stress), Some(0));
        assert_eq!(output_fill(&out(None, true), &stress), Some(FIXED_POISON));
    }
}
