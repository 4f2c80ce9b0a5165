	.text
	.p2align 4
	.globl	least_rotation
	.type	least_rotation, @function
least_rotation:
.LFB23:
	.cfi_startproc
	pushq	%r14
	.cfi_def_cfa_offset 16
	.cfi_offset 14, -16
	movl	$1, %r11d
	xorl	%r10d, %r10d
	pushq	%rbx
	.cfi_def_cfa_offset 24
	.cfi_offset 3, -24
	xorl	%ebx, %ebx
	cmpl	$1, %esi
	jle	.L1
	.p2align 4,,10
	.p2align 3
.L2:
	movl	%r11d, %edx
	movl	%ebx, %eax
	xorl	%r9d, %r9d
	jmp	.L9
	.p2align 4,,10
	.p2align 3
.L5:
	cmpl	%r8d, %esi
	je	.L7
.L6:
	movl	%ecx, %edx
	movl	%r8d, %r9d
.L9:
	movslq	%edx, %r8
	movslq	%eax, %rcx
	movzbl	(%rdi,%r8), %r14d
	cmpb	%r14b, (%rdi,%rcx)
	jne	.L16
	addl	$1, %eax
	leal	1(%rdx), %ecx
	leal	1(%r9), %r8d
	cmpl	%eax, %esi
	cmove	%r10d, %eax
	cmpl	%ecx, %esi
	jne	.L5
	cmpl	%edx, %r9d
	je	.L7
	xorl	%ecx, %ecx
	jmp	.L6
	.p2align 4,,10
	.p2align 3
.L16:
	cmpl	%r9d, %esi
	jle	.L7
	movzbl	(%rdi,%rcx), %eax
	cmpb	%al, %r14b
	cmovl	%r11d, %ebx
.L7:
	addl	$1, %r11d
	cmpl	%r11d, %esi
	jne	.L2
.L1:
	movl	%ebx, %eax
	popq	%rbx
	.cfi_def_cfa_offset 16
	popq	%r14
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
.LFE23:
	.size	least_rotation, .-least_rotation
