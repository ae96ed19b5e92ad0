//! The board, by hand: no peripheral-access crate exists for AN386.
//!
//! * the interrupt numbers and the vector table's device part
//!   (`__INTERRUPTS`, with `device.x` giving each a default);
//! * the registers the firmware uses: the two CMSDK APB timers, the dual
//!   timer (SP804-like) and UART0, at the addresses of qemu's
//!   `hw/arm/mps2.c`, all clocked at 25 MHz.
//!
//! Every `unsafe` of the firmware is in this module.
#![allow(unsafe_code)]

use core::ptr::{read_volatile, write_volatile};

/// The AN386's interrupts (the first 16 of its 32; the rest are unused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
#[repr(u16)]
pub enum Interrupt {
    /// UART0 receive.
    UART0RX = 0,
    /// UART0 transmit.
    UART0TX = 1,
    /// UART1 receive.
    UART1RX = 2,
    /// UART1 transmit.
    UART1TX = 3,
    /// UART2 receive.
    UART2RX = 4,
    /// UART2 transmit.
    UART2TX = 5,
    /// GPIO 0 combined.
    GPIO0 = 6,
    /// GPIO 1 combined.
    GPIO1 = 7,
    /// APB timer 0: the measuring interrupt.
    TIMER0 = 8,
    /// APB timer 1: the disturbance.
    TIMER1 = 9,
    /// The dual timer (the free-running clock; its interrupt is not used).
    DUALTIMER = 10,
    /// SPI 0.
    SPI0 = 11,
    /// UART overflow, combined.
    UARTOVF = 12,
    /// Ethernet.
    ETHERNET = 13,
    /// Audio I2S.
    I2S = 14,
    /// Touch screen.
    TSC = 15,
}

/// What cortex-m-rt's `#[interrupt]` attribute looks the handlers' names up in.
pub use self::Interrupt as interrupt;

// SAFETY: the numbers are the AN386's interrupt lines, all below its 32.
unsafe impl cortex_m::interrupt::InterruptNumber for Interrupt {
    fn number(self) -> u16 {
        self as u16
    }
}

/// A vector table entry: a handler or a reserved word.
pub union Vector {
    handler: unsafe extern "C" fn(),
    _reserved: usize,
}

extern "C" {
    fn UART0RX();
    fn UART0TX();
    fn UART1RX();
    fn UART1TX();
    fn UART2RX();
    fn UART2TX();
    fn GPIO0();
    fn GPIO1();
    fn TIMER0();
    fn TIMER1();
    fn DUALTIMER();
    fn SPI0();
    fn UARTOVF();
    fn ETHERNET();
    fn I2S();
    fn TSC();
}

/// The device part of the vector table, placed by cortex-m-rt's link.x.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
pub static __INTERRUPTS: [Vector; 16] = [
    Vector { handler: UART0RX },
    Vector { handler: UART0TX },
    Vector { handler: UART1RX },
    Vector { handler: UART1TX },
    Vector { handler: UART2RX },
    Vector { handler: UART2TX },
    Vector { handler: GPIO0 },
    Vector { handler: GPIO1 },
    Vector { handler: TIMER0 },
    Vector { handler: TIMER1 },
    Vector { handler: DUALTIMER },
    Vector { handler: SPI0 },
    Vector { handler: UARTOVF },
    Vector { handler: ETHERNET },
    Vector { handler: I2S },
    Vector { handler: TSC },
];

/// A 32-bit device register.
#[derive(Clone, Copy)]
struct Reg(usize);

impl Reg {
    #[inline(always)]
    fn read(self) -> u32 {
        // SAFETY: `Reg`s are only made below, for the aligned addresses of
        // AN386 peripheral registers, which are always mapped; a read has no
        // effect on memory the program owns.
        unsafe { read_volatile(self.0 as *const u32) }
    }

    #[inline(always)]
    fn write(self, v: u32) {
        // SAFETY: as for `read`: a device register, not memory of the program.
        unsafe { write_volatile(self.0 as *mut u32, v) }
    }
}

/// A CMSDK APB timer: counts down at 25 MHz, raises its interrupt on the
/// count from 1 to 0, holds 0 for one clock and reloads.
#[derive(Clone, Copy)]
pub struct ApbTimer(usize);

/// APB timer 0 (IRQ 8).
pub const TIMER_0: ApbTimer = ApbTimer(0x4000_0000);
/// APB timer 1 (IRQ 9).
pub const TIMER_1: ApbTimer = ApbTimer(0x4000_1000);

impl ApbTimer {
    /// Stop it, set its reload and its current count (`value` ticks to its
    /// first expiry), and clear a pending expiry.
    pub fn setup(self, reload: u32, value: u32) {
        Reg(self.0).write(0);
        Reg(self.0 + 0x08).write(reload);
        Reg(self.0 + 0x04).write(value);
        Reg(self.0 + 0x0C).write(1);
    }

    /// Set the current count.
    #[inline(always)]
    pub fn set_value(self, value: u32) {
        Reg(self.0 + 0x04).write(value);
    }

    /// Start counting, with its interrupt enabled.
    #[inline(always)]
    pub fn start(self) {
        Reg(self.0).write(0b1001);
    }

    /// Stop counting.
    pub fn stop(self) {
        Reg(self.0).write(0);
    }

    /// The current count.
    #[inline(always)]
    pub fn value(self) -> u32 {
        Reg(self.0 + 0x04).read()
    }

    /// Acknowledge its interrupt (INTCLEAR is write-1-to-clear).
    #[inline(always)]
    pub fn clear(self) {
        Reg(self.0 + 0x0C).write(1);
    }
}

/// The dual timer's first counter as a free-running 32-bit down counter
/// at 25 MHz (wraps every 171.8 s).
pub struct DualTimer;

const DUAL: usize = 0x4000_2000;

impl DualTimer {
    /// Start it from 0xFFFF_FFFF, free-running, 32 bits, no prescaler, no
    /// interrupt.
    pub fn start() {
        Reg(DUAL + 0x08).write(0);
        Reg(DUAL).write(u32::MAX);
        Reg(DUAL + 0x08).write(0b1000_0010);
    }

    /// Ticks since it started, modulo 2^32 (the counter, counted up).
    #[inline(always)]
    pub fn ticks() -> u32 {
        !Reg(DUAL + 0x04).read()
    }
}

/// UART0, transmit only.
pub struct Uart0;

const UART0: usize = 0x4000_4000;

impl Uart0 {
    /// Enable the transmitter (BAUDDIV 25 MHz / 115200 = 217: qemu ignores
    /// it, a board does not).
    pub fn init() {
        Reg(UART0 + 0x10).write(217);
        Reg(UART0 + 0x08).write(1);
    }

    /// Send one byte, waiting while the transmit buffer is full.
    #[inline]
    pub fn write(b: u8) {
        while Reg(UART0 + 0x04).read() & 1 != 0 {}
        Reg(UART0).write(u32::from(b));
    }
}

/// Unmask `irq` in the NVIC at `priority` (0 highest; the upper bits count).
pub fn enable(nvic: &mut cortex_m::peripheral::NVIC, irq: Interrupt, priority: u8) {
    // SAFETY: priorities are set before the interrupt is unmasked, and no
    // priority-based critical section (BASEPRI) exists in this firmware.
    unsafe {
        nvic.set_priority(irq, priority);
        cortex_m::peripheral::NVIC::unmask(irq);
    }
}

/// A fault (a stack overflow runs into unmapped memory below the RAM):
/// end the emulation with a failure, or stop here on a board.
#[cortex_m_rt::exception]
unsafe fn HardFault(_frame: &cortex_m_rt::ExceptionFrame) -> ! {
    #[cfg(feature = "semihosting")]
    cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

/// Bytes of the stack ever used: cortex-m-rt paints it (feature
/// `paint-stack`) with 0xCCCC_CCCC before `main`; the lowest word that
/// changed is the high-water mark.
pub fn stack_used() -> u32 {
    extern "C" {
        static _stack_end: u32;
        static _stack_start: u32;
    }
    let (lo, hi) = (
        core::ptr::addr_of!(_stack_end) as usize,
        core::ptr::addr_of!(_stack_start) as usize,
    );
    let mut a = lo;
    // SAFETY: [lo, hi) is the stack region of memory.x, mapped RAM, read
    // word by word below the current stack pointer (never written here).
    while a < hi && unsafe { read_volatile(a as *const u32) } == 0xCCCC_CCCC {
        a += 4;
    }
    (hi - a) as u32
}
