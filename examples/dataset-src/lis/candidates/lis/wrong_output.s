	.text
	.p2align 4
	.globl	lis
	.type	lis, @function
lis:
.LFB23:
	.cfi_startproc
	testl	%edx, %edx
	jle	.L8
	movl	$1, (%rsi)
	movl	$1, %r11d
	cmpl	$1, %edx
	je	.L1
	movl	%edx, %r10d
	leaq	4(%rdi), %r8
	movl	$1, %edx
	movl	$1, %r11d
	.p2align 4,,10
	.p2align 3
.L6:
	movl	$0, (%rsi,%rdx,4)
	xorl	%eax, %eax
	movl	$1, %ecx
	.p2align 4,,10
	.p2align 3
.L5:
	movl	(%r8), %r9d
	cmpl	%r9d, (%rdi,%rax,4)
	jge	.L4
	movl	(%rsi,%rax,4), %r9d
	cmpl	%r9d, %ecx
	jg	.L4
	leal	1(%r9), %ecx
	movl	%ecx, (%rsi,%rdx,4)
.L4:
	addq	$1, %rax
	cmpl	%edx, %eax
	jl	.L5
	cmpl	%ecx, %r11d
	cmovl	%ecx, %r11d
	addq	$1, %rdx
	addq	$4, %r8
	cmpq	%rdx, %r10
	jne	.L6
.L1:
	movl	%r11d, %eax
	ret
.L8:
	xorl	%r11d, %r11d
	movl	%r11d, %eax
	ret
	.cfi_endproc
.LFE23:
	.size	lis, .-lis
