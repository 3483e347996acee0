//! Sizing the pct jitter from the kernel itself: the plan table written into the prelude, the
//! barrier counter it fills, the launch geometry from the occupancy calculator, the
//! calibration launch (see [`super::schedule`]), and the bare launch loop `bench` compares
//! against. Part of [`super::launch::Gpu`].

use cudarc::driver::{CudaFunction, CudaSlice};

use super::launch::{Gpu, Module, Resident, RunOptions};
use super::poison::FIXED_POISON;
use super::schedule::{Calibration, Plan, MODE_DENSE};
use crate::errors::{Error, Result};
use crate::source::exercises::{Init, Problem};

impl Gpu {
    /// Writes a plan into the prelude's `racegate_jitter_plan` (and, for the dense jitter, its
    /// seed); a module built without jitter has neither, and nothing is written.
    pub(super) fn set_jitter_plan(&self, module: &Module, plan: &Plan) -> Result<()> {
        let Ok(mut table) = module
            .module
            .get_global("racegate_jitter_plan", &self.stream)
        else {
            return Ok(()); // built without jitter
        };
        self.stream
            .memcpy_htod(&plan.to_bytes(), &mut table)
            .map_err(|e| Error::cuda("writing the jitter plan", e))?;
        if plan.mode == MODE_DENSE {
            let mut seed = module
                .module
                .get_global("racegate_jitter_seed", &self.stream)
                .map_err(|e| Error::cuda("finding the jitter seed", e))?;
            self.stream
                .memcpy_htod(&plan.seed.to_le_bytes(), &mut seed)
                .map_err(|e| Error::cuda("setting the jitter seed", e))?;
        }
        Ok(())
    }

    /// Clears the prelude's barrier counter before a pct launch (no-op without jitter).
    pub(super) fn clear_instances(&self, module: &Module) -> Result<()> {
        if let Ok(mut n) = module
            .module
            .get_global("racegate_jitter_instances", &self.stream)
        {
            self.stream
                .memset_zeros(&mut n)
                .map_err(|e| Error::cuda("clearing the barrier counter", e))?;
        }
        Ok(())
    }

    /// Copies the prelude's barrier counter into `dst` on the device (no-op without jitter).
    pub(super) fn copy_instances(
        &self,
        module: &Module,
        dst: &mut CudaSlice<u32>,
        at: usize,
    ) -> Result<()> {
        if let Ok(n) = module
            .module
            .get_global("racegate_jitter_instances", &self.stream)
        {
            let mut slot = dst.slice_mut(at..at + 1);
            // SAFETY: both are 4 bytes on this context; the view only reinterprets u8 as u32.
            let src = unsafe { n.transmute::<u32>(1) }
                .ok_or_else(|| Error::Usage("the barrier counter is not 4 bytes".into()))?;
            self.stream
                .memcpy_dtod(&src, &mut slot)
                .map_err(|e| Error::cuda("reading the barrier counter", e))?;
        }
        Ok(())
    }

    /// Blocks, warps per block and waves (rounds of resident blocks) of the problem's largest
    /// step, from the driver's occupancy calculator.
    pub fn geometry(&self, module: &Module, problem: &Problem) -> Result<(u32, u64, u32)> {
        let (mut warps, mut blocks, mut waves) = (1u32, 1u64, 1u32);
        for step in &problem.launches {
            let threads = step.block.0 * step.block.1 * step.block.2;
            let n = step.grid.0 as u64 * step.grid.1 as u64 * step.grid.2 as u64;
            let func = self.function(module, &step.kernel)?;
            let per_sm = func
                .occupancy_max_active_blocks_per_multiprocessor(threads, step.shared as usize, None)
                .unwrap_or(1)
                .max(1);
            let slots = per_sm as u64 * self.sm_count.max(1) as u64;
            warps = warps.max(threads.div_ceil(32));
            blocks = blocks.max(n);
            waves = waves.max(u32::try_from(n.div_ceil(slots)).unwrap_or(u32::MAX));
        }
        Ok((warps, blocks, waves))
    }

    /// Measures what a pct plan is sized from: the problem's launches with the jitter prelude
    /// off (the faster of two runs; the first may load the kernel lazily), then one launch
    /// that counts the barriers warp 0 of block 0 goes through. Restores every input and
    /// in-out buffer on the device afterwards, so the next trial starts clean.
    ///
    /// The time is a launch with the prelude off, not the counting one: counting in every
    /// block cost the short reductions about twice their bare launch (H200 run 26), so a
    /// budget sized from it let nearly every block take part: a pct trial of a reduction cost
    /// 5x a bare launch, where the budget aims at half a launch added.
    pub fn calibrate(
        &self,
        module: &Module,
        problem: &Problem,
        res: &mut Resident,
    ) -> Result<Calibration> {
        let (warps, blocks, waves) = self.geometry(module, problem)?;
        let opts = RunOptions {
            jitter_seed: None,
            poison_shared: false,
            poison_outputs: true,
            poison: FIXED_POISON,
        };
        let mut best = std::time::Duration::MAX;
        for _ in 0..2 {
            self.reset(problem, res, opts)?;
            self.stream
                .synchronize()
                .map_err(|e| Error::cuda("calibrating", e))?;
            let t = std::time::Instant::now();
            self.launch_problem(module, problem, &res.bufs, opts, Some(&Plan::off()))?;
            self.stream
                .synchronize()
                .map_err(|e| Error::cuda("running the kernel", e))?;
            best = best.min(t.elapsed());
        }
        // The count, from a launch of its own (its time is not the kernel's).
        self.reset(problem, res, opts)?;
        self.clear_instances(module)?;
        self.launch_problem(module, problem, &res.bufs, opts, Some(&Plan::count_only(0)))?;
        self.stream
            .synchronize()
            .map_err(|e| Error::cuda("running the kernel", e))?;
        let n = problem.buffers.len();
        self.copy_instances(module, &mut res.counts, n)?;
        let counts = self
            .stream
            .clone_dtoh(&res.counts)
            .map_err(|e| Error::cuda("reading the barrier counter", e))?;
        self.restore_all(res)?;
        Ok(Calibration {
            kernel_ns: u64::try_from(best.as_nanos()).unwrap_or(u64::MAX),
            instances: counts[n],
            warps,
            blocks,
            waves,
        })
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
