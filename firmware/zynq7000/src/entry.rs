//! The reset entry: QEMU's `-kernel` starts the ELF here, in SVC mode with IRQs and FIQs
//! masked, MMU and caches off. Sets the stacks (SVC for the firmware; undefined and abort
//! modes for a fault report), low vectors at [`VECTORS`], zeroes `.bss`, calls `main_entry`.

core::arch::global_asm!(
    r#"
    .section .text.entry, "ax"
    .arm
    .global _start
_start:
    cps #0x1b
    ldr sp, =_exception_stack_top
    cps #0x17
    ldr sp, =_exception_stack_top
    cps #0x13
    ldr sp, =_stack_top
    /* Low vectors (SCTLR.V = 0) at our table (VBAR). */
    mrc p15, 0, r0, c1, c0, 0
    bic r0, r0, #0x2000
    mcr p15, 0, r0, c1, c0, 0
    ldr r0, =linklab_vectors
    mcr p15, 0, r0, c12, c0, 0
    isb
    ldr r0, =__bss_start
    ldr r1, =__bss_end
    mov r2, #0
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    bl main_entry
2:  wfi
    b 2b

    .align 5
    .global linklab_vectors
linklab_vectors:
    b _start
    b linklab_undefined
    b linklab_other_exception
    b linklab_prefetch_abort
    b linklab_data_abort
    b linklab_other_exception
    b linklab_other_exception
    b linklab_other_exception
linklab_undefined:
    mov r0, #1
    sub r1, lr, #4
    b linklab_fault
linklab_prefetch_abort:
    mov r0, #3
    sub r1, lr, #4
    b linklab_fault
linklab_data_abort:
    mov r0, #4
    sub r1, lr, #8
    b linklab_fault
linklab_other_exception:
    mov r0, #0
    mov r1, lr
    b linklab_fault
"#
);

/// The vector table's address (for reports).
pub const VECTORS: &str = "linklab_vectors";

/// Called by the vectors with the exception's kind and where it happened: one console line,
/// then a halt.
#[no_mangle]
extern "C" fn linklab_fault(kind: u32, at: u32) -> ! {
    let name = match kind {
        1 => "undefined instruction",
        3 => "prefetch abort",
        4 => "data abort",
        _ => "unexpected exception",
    };
    crate::uart::write("linklab firmware: ");
    crate::uart::write(name);
    crate::uart::write(" at 0x");
    crate::uart::write_hex(at);
    crate::uart::write("\n");
    crate::halt()
}
