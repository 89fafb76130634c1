//! The reset entry and the exception vectors. QEMU's `-kernel` starts the ELF at `_start` in
//! SVC mode with IRQs and FIQs masked, MMU and caches off. The entry sets the stacks (SVC for
//! the firmware; IRQ, undefined and abort modes on the exception stack), low vectors at
//! `linklab_vectors` (VBAR), zeroes `.bss` and the DMA statics (`.uncached`), and calls the
//! image's `main_entry`.
//!
//! An IRQ saves the caller-saved registers on the SVC stack (8-byte aligned, as the AAPCS
//! wants at a call), calls the handler the board registered ([`crate::set_irq_handler`]) with
//! IRQs still masked, and returns to the interrupted code. Any other exception prints one
//! console line (its kind and where) and halts.

core::arch::global_asm!(
    r#"
    .section .text.entry, "ax"
    .arm
    .global _start
_start:
    cps #0x12
    ldr sp, =_exception_stack_top
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
    mov r2, #0
    ldr r0, =__bss_start
    ldr r1, =__bss_end
1:  cmp r0, r1
    strlo r2, [r0], #4
    blo 1b
    ldr r0, =__uncached_start
    ldr r1, =__uncached_end
2:  cmp r0, r1
    strlo r2, [r0], #4
    blo 2b
    bl main_entry
3:  wfi
    b 3b

    .align 5
    .global linklab_vectors
linklab_vectors:
    b _start
    b linklab_undefined
    b linklab_other_exception
    b linklab_prefetch_abort
    b linklab_data_abort
    b linklab_other_exception
    b linklab_irq_entry
    b linklab_other_exception
linklab_irq_entry:
    sub lr, lr, #4
    srsdb sp!, #0x13
    cps #0x13
    push {{r0-r3, r12, lr}}
    and r1, sp, #4
    sub sp, sp, r1
    push {{r1, r2}}
    bl linklab_cortex_a9_irq
    pop {{r1, r2}}
    add sp, sp, r1
    pop {{r0-r3, r12, lr}}
    rfeia sp!
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

/// Called by the IRQ entry: the board's handler, or a fault line if there is none.
#[no_mangle]
extern "C" fn linklab_cortex_a9_irq() {
    match crate::irq_handler() {
        Some(handler) => handler(),
        None => linklab_fault(2, 0),
    }
}

/// Called by the vectors with the exception's kind and where it happened: one console line,
/// then a halt.
#[no_mangle]
extern "C" fn linklab_fault(kind: u32, at: u32) -> ! {
    let name = match kind {
        1 => "undefined instruction",
        2 => "IRQ without a handler",
        3 => "prefetch abort",
        4 => "data abort",
        _ => "unexpected exception",
    };
    let mut hex = [0u8; 8];
    crate::console("linklab firmware: ");
    crate::console(name);
    crate::console(" at 0x");
    crate::console(crate::hex(at, &mut hex));
    crate::console("\n");
    crate::halt()
}
