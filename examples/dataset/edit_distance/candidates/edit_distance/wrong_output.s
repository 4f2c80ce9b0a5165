	.text
	.p2align 4
	.globl	edit_distance
	.type	edit_distance, @function
edit_distance:
.LFB23:
	.cfi_startproc
	pushq	%r12
	.cfi_def_cfa_offset 16
	.cfi_offset 12, -16
	movq	%rdx, %r9
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset 6, -24
	pushq	%rbx
	.cfi_def_cfa_offset 32
	.cfi_offset 3, -32
	movslq	%ecx, %rbx
	testl	%ebx, %ebx
	js	.L8
	leal	1(%rbx), %ecx
	cmpl	$2, %ebx
	jbe	.L13
	movl	%ecx, %edx
	movdqa	.LC0(%rip), %xmm0
	movdqa	.LC1(%rip), %xmm2
	movq	%r8, %rax
	shrl	$2, %edx
	salq	$4, %rdx
	addq	%r8, %rdx
	.p2align 4,,10
	.p2align 3
.L6:
	movdqa	%xmm0, %xmm1
	addq	$16, %rax
	paddd	%xmm2, %xmm0
	movups	%xmm1, -16(%rax)
	cmpq	%rdx, %rax
	jne	.L6
	movl	%ecx, %eax
	andl	$-4, %eax
	andl	$3, %ecx
	je	.L8
.L5:
	movslq	%eax, %rdx
	movl	%eax, (%r8,%rdx,4)
	leaq	0(,%rdx,4), %rcx
	leal	1(%rax), %edx
	cmpl	%edx, %ebx
	jl	.L8
	addl	$2, %eax
	movl	%edx, 4(%r8,%rcx)
	cmpl	%eax, %ebx
	jl	.L8
	movl	%eax, 8(%r8,%rcx)
.L8:
	leal	1(%rsi), %ebp
	movl	$2, %r11d
	leal	1(%rbx), %r10d
	testl	%esi, %esi
	jle	.L4
	.p2align 4,,10
	.p2align 3
.L12:
	movl	(%r8), %esi
	movl	%r11d, (%r8)
	testl	%ebx, %ebx
	jle	.L10
	movl	%r11d, %eax
	movl	$1, %ecx
	.p2align 4,,10
	.p2align 3
.L11:
	movzbl	-1(%r9,%rcx), %edx
	cmpb	%dl, (%rdi)
	movl	%esi, %r12d
	setne	%dl
	addl	$1, %eax
	movl	(%r8,%rcx,4), %esi
	movzbl	%dl, %edx
	addl	%r12d, %edx
	cmpl	%eax, %edx
	cmovg	%eax, %edx
	leal	1(%rsi), %eax
	cmpl	%eax, %edx
	cmovle	%edx, %eax
	movl	%eax, (%r8,%rcx,4)
	addq	$1, %rcx
	cmpq	%r10, %rcx
	jne	.L11
.L10:
	addl	$1, %r11d
	addq	$1, %rdi
	cmpl	%ebp, %r11d
	jne	.L12
.L4:
	movl	(%r8,%rbx,4), %eax
	popq	%rbx
	.cfi_remember_state
	.cfi_def_cfa_offset 24
	popq	%rbp
	.cfi_def_cfa_offset 16
	popq	%r12
	.cfi_def_cfa_offset 8
	ret
.L13:
	.cfi_restore_state
	xorl	%eax, %eax
	jmp	.L5
	.cfi_endproc
.LFE23:
	.size	edit_distance, .-edit_distance
	.section	.rodata.cst16,"aM",@progbits,16
	.align 16
.LC0:
	.long	0
	.long	1
	.long	2
	.long	3
	.align 16
.LC1:
	.long	4
	.long	4
	.long	4
	.long	4
