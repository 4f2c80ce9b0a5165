	.text
	.p2align 4
	.globl	collatz_steps
	.type	collatz_steps, @function
collatz_steps:
	.cfi_startproc
	xorl	%eax, %eax
	cmpq	$1, %rdi
	je	.Lc_collatz_steps_2
	.p2align 4,,10
	.p2align 3
.Lc_collatz_steps_1:
	leaq	1(%rdi,%rdi,2), %rdx
	sarq	%rdi
	cmovc	%rdx, %rdi
	addq	$1, %rax
	cmpq	$1, %rdi
	jne	.Lc_collatz_steps_1
.Lc_collatz_steps_2:
	ret
	.cfi_endproc
	.size	collatz_steps, .-collatz_steps
