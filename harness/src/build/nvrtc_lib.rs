//! NVRTC's functions, looked up in the one library racegate checked and loaded by its absolute
//! path (the toolchain's search finds it), and called only through this table.
//!
//! cudarc's own NVRTC bindings open the library by name (`libnvrtc.so` first, then a dozen other
//! names), and the dynamic loader looks a name up along `LD_LIBRARY_PATH`, its cache and the
//! system folders: it may find another file than the one racegate checked (a `libnvrtc.so` of
//! CUDA 12, or one in a folder someone else can write), or, with an empty `LD_LIBRARY_PATH`
//! entry, one in the current folder. A handle from `dlopen` of the checked path, and `dlsym` in
//! it, reach that file and nothing else. NVRTC's status codes are named as in `nvrtc.h`.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

/// An NVRTC program (`nvrtcProgram`).
pub type Program = *mut c_void;
type Status = c_int;

/// NVRTC's functions that racegate calls, from one loaded library.
pub struct Api {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    destroy: unsafe extern "C" fn(*mut Program) -> Status,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    add_name: unsafe extern "C" fn(Program, *const c_char) -> Status,
    lowered: unsafe extern "C" fn(Program, *const c_char, *mut *const c_char) -> Status,
}

/// The functions [`Api`] holds, as NVRTC names them: a library without all of them is not NVRTC.
pub const SYMBOLS: [&str; 10] = [
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcCompileProgram",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcAddNameExpression",
    "nvrtcGetLoweredName",
];

/// Opens the library at `path` with local symbols (nothing it defines can stand in for another
/// library's functions) and binds NVRTC's functions in it. `Err` says why: the loader's message,
/// or the functions it lacks, as a phrase that follows the path (`could not be loaded: ...`,
/// `is not NVRTC: it lacks ...`).
///
/// # Safety
/// Loading a library runs its constructors: `path` must have passed the trust check.
pub unsafe fn open(path: &Path) -> Result<Api, String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| "the path holds a NUL byte".to_string())?;
    // SAFETY: a valid C string; the caller vouches for the file. The handle is never closed:
    // NVRTC stays loaded for the life of the process.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns null or a C string valid until the next dl call.
        let why = unsafe { libc::dlerror() };
        return Err(match why.is_null() {
            true => "could not be loaded".into(),
            // SAFETY: non-null, so a C string (above).
            false => format!(
                "could not be loaded: {}",
                unsafe { CStr::from_ptr(why) }.to_string_lossy()
            ),
        });
    }
    let found: Vec<*mut c_void> = SYMBOLS
        .iter()
        .map(|name| {
            let n = CString::new(*name).expect("a symbol name holds no NUL byte");
            // SAFETY: looks a name up in a valid handle; nothing is called.
            unsafe { libc::dlsym(handle, n.as_ptr()) }
        })
        .collect();
    let missing: Vec<&str> = SYMBOLS
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_null())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        return Err(format!("is not NVRTC: it lacks {}", missing.join(", ")));
    }
    // SAFETY: each pointer is the function of that name in NVRTC, whose C signature (nvrtc.h)
    // is the field's type; `SYMBOLS` and the fields are in the same order.
    unsafe {
        Ok(Api {
            version: as_fn(found[0]),
            create: as_fn(found[1]),
            destroy: as_fn(found[2]),
            compile: as_fn(found[3]),
            ptx_size: as_fn(found[4]),
            ptx: as_fn(found[5]),
            log_size: as_fn(found[6]),
            log: as_fn(found[7]),
            add_name: as_fn(found[8]),
            lowered: as_fn(found[9]),
        })
    }
}

/// A symbol's address as the function pointer type `F`.
///
/// # Safety
/// `F` must be a function pointer type that matches the function at `p`.
unsafe fn as_fn<F: Copy>(p: *mut c_void) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: same size (checked), and the caller vouches for the type.
    unsafe { std::mem::transmute_copy(&p) }
}

/// NVRTC's name for a status code (`nvrtcResult`).
pub fn status_name(code: c_int) -> String {
    const NAMES: [&str; 13] = [
        "NVRTC_SUCCESS",
        "NVRTC_ERROR_OUT_OF_MEMORY",
        "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        "NVRTC_ERROR_INVALID_INPUT",
        "NVRTC_ERROR_INVALID_PROGRAM",
        "NVRTC_ERROR_INVALID_OPTION",
        "NVRTC_ERROR_COMPILATION",
        "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
        "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
        "NVRTC_ERROR_INTERNAL_ERROR",
        "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("NVRTC error {code}"), |n| (*n).to_string())
}

fn ok(code: Status) -> Result<(), String> {
    match code {
        0 => Ok(()),
        c => Err(status_name(c)),
    }
}

/// Bytes up to the first NUL, as text.
fn text(mut bytes: Vec<u8>) -> String {
    if let Some(end) = bytes.iter().position(|b| *b == 0) {
        bytes.truncate(end);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Api {
    /// NVRTC's version, `(major, minor)`.
    pub fn version(&self) -> Result<(i32, i32), String> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        ok(unsafe { (self.version)(&mut major, &mut minor) })?;
        Ok((major, minor))
    }

    /// A program of `src` named `name`, with the headers `texts` served under `includes`.
    ///
    /// # Safety
    /// `texts` and `includes` hold the same number of valid C strings.
    pub unsafe fn create(
        &self,
        src: &CStr,
        name: &CStr,
        texts: &[*const c_char],
        includes: &[*const c_char],
    ) -> Result<Program, String> {
        let n = c_int::try_from(texts.len())
            .map_err(|_| format!("{} headers: more than NVRTC takes", texts.len()))?;
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: valid strings (the caller's word for the arrays); NVRTC writes `prog`.
        ok(unsafe {
            (self.create)(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                n,
                texts.as_ptr(),
                includes.as_ptr(),
            )
        })?;
        Ok(prog)
    }

    /// Asks NVRTC to instantiate and name `expr` (`reduce<float, 256>`).
    ///
    /// # Safety
    /// `prog` is a live program from [`Api::create`].
    pub unsafe fn add_name_expression(&self, prog: Program, expr: &CStr) -> Result<(), String> {
        // SAFETY: the caller's word for `prog`; NVRTC copies the string.
        ok(unsafe { (self.add_name)(prog, expr.as_ptr()) })
    }

    /// Compiles `prog` with `options`; `Err` is NVRTC's status (its log is [`Api::log`]).
    ///
    /// # Safety
    /// `prog` is a live program from [`Api::create`].
    pub unsafe fn compile(&self, prog: Program, options: &[String]) -> Result<(), String> {
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()).map_err(|_| format!("option `{o}`: NUL byte")))
            .collect::<Result<_, _>>()?;
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let n = c_int::try_from(ptrs.len()).map_err(|_| "too many options".to_string())?;
        // SAFETY: the caller's word for `prog`; `ptrs` points into `opts`, alive for the call.
        ok(unsafe { (self.compile)(prog, n, ptrs.as_ptr()) })
    }

    /// The program's log, without its NUL.
    ///
    /// # Safety
    /// `prog` is a live program from [`Api::create`].
    pub unsafe fn log(&self, prog: Program) -> Result<String, String> {
        let mut size = 0usize;
        // SAFETY: the caller's word for `prog`; writes one size.
        ok(unsafe { (self.log_size)(prog, &mut size) })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds the `size` bytes NVRTC said it writes.
        ok(unsafe { (self.log)(prog, buf.as_mut_ptr().cast()) })?;
        Ok(text(buf))
    }

    /// The program's PTX, without its NUL.
    ///
    /// # Safety
    /// `prog` is a live program, compiled.
    pub unsafe fn ptx(&self, prog: Program) -> Result<String, String> {
        let mut size = 0usize;
        // SAFETY: the caller's word for `prog`; writes one size.
        ok(unsafe { (self.ptx_size)(prog, &mut size) })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds the `size` bytes NVRTC said it writes.
        ok(unsafe { (self.ptx)(prog, buf.as_mut_ptr().cast()) })?;
        Ok(text(buf))
    }

    /// The lowered (mangled) name of a name expression added before compiling.
    ///
    /// # Safety
    /// `prog` is a live program, compiled.
    pub unsafe fn lowered_name(&self, prog: Program, expr: &CStr) -> Result<String, String> {
        let mut out: *const c_char = std::ptr::null();
        // SAFETY: the caller's word for `prog`; NVRTC points `out` at a string it owns.
        ok(unsafe { (self.lowered)(prog, expr.as_ptr(), &mut out) })?;
        if out.is_null() {
            return Err("NVRTC gave no lowered name".into());
        }
        // SAFETY: non-null, a C string owned by the program, copied before it is destroyed.
        Ok(unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned())
    }

    /// Destroys `prog`; a failure leaks one program and is not reported.
    ///
    /// # Safety
    /// `prog` is a live program, not used after this.
    pub unsafe fn destroy(&self, prog: Program) {
        let mut p = prog;
        // SAFETY: the caller's word for `prog`.
        // ignored: a failed destroy leaks one program, nothing to report
        let _ = unsafe { (self.destroy)(&mut p) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_are_named_as_in_nvrtc_h() {
        assert_eq!(status_name(6), "NVRTC_ERROR_COMPILATION");
        assert_eq!(status_name(12), "NVRTC_ERROR_TIME_FILE_WRITE_FAILED");
        assert_eq!(status_name(99), "NVRTC error 99");
        assert_eq!(status_name(-1), "NVRTC error -1");
    }

    #[test]
    fn a_library_that_is_not_nvrtc_is_named_by_what_it_lacks() {
        // SAFETY: libm is the system's, already loaded by every Rust program here.
        let why = unsafe { open(Path::new("libm.so.6")) }
            .err()
            .expect("libm is not NVRTC");
        assert!(why.contains("lacks nvrtcVersion"), "{why}");
    }
}
